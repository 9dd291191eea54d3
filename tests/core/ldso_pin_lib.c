/*
 * ldso_pin_lib.c -- the library test_ldso_pin dlopens and dlcloses: its
 * constructor and destructor, which ld.so runs with its load lock held,
 * call back into the test program (ldso_pin_body, exported by it), which
 * makes, joins, sleeps and yields there.
 */
void ldso_pin_body(void);
int ldso_pin_marker;

__attribute__((constructor)) static void pin_init(void)
{
    ldso_pin_body();
}

__attribute__((destructor)) static void pin_fini(void)
{
    ldso_pin_body();
}
