# Build fragment for nthlib/cpumgr_client: add sources, programs and tests with +=.
