# Build fragment for bench/bench: add sources, programs and tests with +=.
