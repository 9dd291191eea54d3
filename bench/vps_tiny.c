/* vps_tiny.c -- start the runtime, make and join one nano-thread, exit:
 * the fixed cost of NTH_VPS VPs (bench/vps_scale.sh, issue 5/runtime). */
#include <nth.h>
#include <stdio.h>

static void *one(void *a)
{
    return a;
}

int main(void)
{
    nth_t t;
    void *r = NULL;
    if (nth_create(&t, NULL, one, (void *)1) || nth_join(t, &r) || r != (void *)1) {
        fprintf(stderr, "vps_tiny: create/join failed\n");
        return 1;
    }
    printf("vps=%d\n", nth_num_vps());
    return 0;
}
