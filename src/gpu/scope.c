/* Thread binding scopes: make a device's context current for a while, then
 * restore exactly what was current before.
 *
 * Each thread keeps its open scopes as an intrusive list (innermost first),
 * linked through the caller's omma_scope structs: no allocation, no depth
 * limit, and a leave that is not of the innermost scope is caught before it
 * touches the context stack. */
#include <stdio.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device_private.h"

static _Thread_local omma_scope *innermost;

unsigned omma_scope_depth(void) { return innermost ? innermost->depth_ : 0; }

omma_status omma_device_enter(omma_device *dev, omma_scope *scope)
{
    if (!scope)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_enter: scope is NULL");
    scope->dev_ = NULL;
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_enter: device is NULL");
    CUcontext current = NULL;
    OMMA_TRY(OMMA_CK(gpu_cu.cuCtxGetCurrent(&current)));
    scope->pushed_ = 0;
    if (current != dev->ctx) {
        OMMA_TRY(OMMA_CK(gpu_cu.cuCtxPushCurrent(dev->ctx)));
        scope->pushed_ = 1;
    }
    scope->prev_ctx_ = current;
    scope->outer_ = innermost;
    scope->depth_ = innermost ? innermost->depth_ + 1 : 1;
    scope->dev_ = dev;
    innermost = scope;
    return OMMA_OK;
}

omma_status omma_device_leave(omma_scope *scope)
{
    if (!scope)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_leave: scope is NULL");
    if (!scope->dev_)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "omma_device_leave: the scope is not entered (never entered, its "
                         "enter failed, or it was left already)");
    if (scope != innermost) {
        if (!innermost)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "omma_device_leave: scope of depth %u was entered on another "
                             "thread; this thread has no open scope",
                             scope->depth_);
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "omma_device_leave out of order: leaving the scope of depth %u while "
                         "the scope of depth %u is still open on this thread (or the scope "
                         "belongs to another thread); leave the inner scopes first",
                         scope->depth_, innermost->depth_);
    }
    CUcontext current = NULL;
    OMMA_TRY(OMMA_CK(gpu_cu.cuCtxGetCurrent(&current)));
    if (current != scope->dev_->ctx)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "omma_device_leave: the current context changed inside the scope of "
                         "depth %u (device %d's context %p expected, %p found): a context was "
                         "pushed or set and not restored before leaving",
                         scope->depth_, scope->dev_->ordinal, (void *)scope->dev_->ctx,
                         (void *)current);
    if (scope->pushed_) {
        CUcontext popped = NULL;
        OMMA_TRY(OMMA_CK(gpu_cu.cuCtxPopCurrent(&popped)));
    }
    innermost = scope->outer_;
    scope->dev_ = NULL;
    scope->outer_ = NULL;
    return OMMA_OK;
}

omma_status gpu_leave_keep(omma_scope *scope, omma_status st)
{
    if (st == OMMA_OK)
        return omma_device_leave(scope);
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", omma_last_error());
    omma_device_leave(scope);
    return core_fail_text(st, detail);
}

omma_status omma_device_call(omma_device *dev, omma_status (*fn)(void *arg), void *arg)
{
    if (!fn)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_call: fn is NULL");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, fn(arg));
}
