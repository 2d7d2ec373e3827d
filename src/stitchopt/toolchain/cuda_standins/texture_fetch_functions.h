/* Empty stand-in: clang 19's CUDA wrapper includes this header, which CUDA 13 no longer ships. */
