/* Stands in for a GPU test in a build without CUDA (OMMA_CUDA=OFF): the
 * test's sources need the CUDA toolkit, so CTest runs this instead and
 * reports it skipped with the reason (testing.h's SKIP_TEST format). */
#include <stdio.h>

int main(void)
{
    fprintf(stderr, "SKIP: built without CUDA (OMMA_CUDA=OFF)\n");
    return 77;
}
