# Build fragment for nthlib/sync: add sources, programs and tests with +=.
