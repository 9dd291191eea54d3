# Build fragment for pthread-shim/shim: add sources, programs and tests with +=.
