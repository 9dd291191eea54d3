/* For the NTH_TRACE_MALLOC test: ten 1 MiB blocks held, then freed. */
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *p[10];
    for (int i = 0; i < 10; i++) {
        p[i] = malloc(1 << 20);
        if (!p[i])
            return 1;
        memset(p[i], i, 1 << 20);
    }
    for (int i = 0; i < 10; i++)
        free(p[i]);
    return 0;
}
