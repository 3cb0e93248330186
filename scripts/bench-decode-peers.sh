#!/usr/bin/env bash
# omma bench decode and its peers on one GPU, for each clip of CODECS:
#   1. FFmpeg's NVDEC decode-only limit: P parallel `ffmpeg -hwaccel cuda
#      -hwaccel_output_format cuda -i FILE -f null -` (each decoding the clip
#      LOOPS times), for P in 4 8 16 32: frames/s over the wall time; the
#      largest is the GPU's decode limit (frames stay on the GPU, as omma's);
#   2. omma bench decode --decode gpu --streams max;
#   3. omma bench decode --decode cpu --streams max (the CPU decodes);
#   4. omma bench decode --decode auto --streams max.
# Logs and JSON lines go to OUTDIR (bench-decode.log, bench-decode.jsonl).
#   usage: scripts/bench-decode-peers.sh OMMA CLIPDIR OUTDIR
#   environment: CODECS (h264 hevc), LOOPS (4), MODES (gpu cpu auto),
#   STREAMS (max: the stream counts to run), PEERS (1: 0 skips FFmpeg),
#   BENCH_ARGS (more options for omma bench decode, e.g. --cpu-breakdown)
set -u
omma=${1:?usage: bench-decode-peers.sh OMMA CLIPDIR OUTDIR}
clips=${2:?}
out=${3:?}
log=$out/bench-decode.log
json=$out/bench-decode.jsonl
loops=${LOOPS:-4}
for codec in ${CODECS:-h264 hevc}; do
    clip=$clips/pan1080_$codec.mp4
    frames=$(( $(ffprobe -v error -count_packets -select_streams v:0 -show_entries \
        stream=nb_read_packets -of csv=p=0 "$clip") * loops ))
    # The decode-only form this FFmpeg accepts: frames left on the GPU
    # (-pix_fmt cuda keeps the output filter from converting them), else
    # downloaded (which adds a copy per frame: said in the log).
    form=
    [ "${PEERS:-1}" = 1 ] || form=skip
    for f in "-f null -" "-pix_fmt cuda -f null -" "-vf hwdownload,format=nv12 -f null -"; do
        [ "$form" != skip ] || break
        # shellcheck disable=SC2086
        if ffmpeg -nostdin -hide_banner -loglevel error -xerror -reinit_filter 0 -hwaccel cuda \
            -hwaccel_output_format cuda -stream_loop 1 -i "$clip" $f 2>"$out/ffmpeg-probe.log"; then
            form=$f
            break
        fi
    done
    if [ -z "$form" ]; then
        echo "ffmpeg nvdec $codec: no decode-only command works:" | tee -a "$log"
        tail -n 5 "$out/ffmpeg-probe.log" | tee -a "$log"
        continue
    fi
    if [ "$form" != skip ]; then
        echo "ffmpeg nvdec $codec: ffmpeg -hwaccel cuda -hwaccel_output_format cuda -i CLIP $form" |
            tee -a "$log"
        best=0
        for p in 4 8 16 32; do
            t0=$(date +%s.%N)
            pids=()
            for i in $(seq "$p"); do
                # shellcheck disable=SC2086
                ffmpeg -nostdin -hide_banner -loglevel error -xerror -reinit_filter 0 -hwaccel cuda \
                    -hwaccel_output_format cuda -stream_loop $((loops - 1)) -i "$clip" $form \
                    2>"$out/ffmpeg-$i.log" &
                pids+=($!)
            done
            bad=0
            for pid in "${pids[@]}"; do wait "$pid" || bad=$((bad + 1)); done
            t1=$(date +%s.%N)
            if [ "$bad" -gt 0 ]; then
                echo "ffmpeg nvdec $codec: $bad of $p processes failed:" | tee -a "$log"
                cat "$out"/ffmpeg-*.log | sort | uniq -c | head -n 5 | tee -a "$log"
                break
            fi
            rm -f "$out"/ffmpeg-*.log
            fps=$(awk -v p="$p" -v f="$frames" -v a="$t0" -v b="$t1" 'BEGIN { print p * f / (b - a) }')
            printf 'ffmpeg nvdec %s: %2d processes x %d frames: %.0f frames/s\n' "$codec" "$p" \
                "$frames" "$fps" | tee -a "$log"
            printf '{"bench":"ffmpeg-nvdec","codec":"%s","processes":%d,"frames_per_s":%.1f}\n' \
                "$codec" "$p" "$fps" >>"$json"
            best=$(awk -v a="$fps" -v b="$best" 'BEGIN { print (a > b ? a : b) }')
        done
        printf 'ffmpeg nvdec %s: decode-only limit %.0f frames/s (%.1f 1080p30 streams)\n' "$codec" \
            "$best" "$(awk -v b="$best" 'BEGIN { print b / 30 }')" | tee -a "$log"
    fi
    for mode in ${MODES:-gpu cpu auto}; do
        for streams in ${STREAMS:-max}; do
            echo "== omma bench decode --decode $mode --streams $streams --input $clip" |
                tee -a "$log"
            # shellcheck disable=SC2086
            "$omma" bench decode --decode "$mode" --input "$clip" --streams "$streams" \
                --warmup 2 --duration 5 --json ${BENCH_ARGS:-} >>"$json" 2>>"$log"
            tail -n "$([ -n "${BENCH_ARGS:-}" ] && echo 4 || echo 1)" "$log"
        done
    done
done
