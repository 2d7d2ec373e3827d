/* CWE-14 beside identical functions: two digest "final" functions each clear their context, and their bodies are
   the same, so `mergefunc` keeps one and turns the other into a call of it. The clear still runs for both: the
   guard counts a function that only calls another as that function's items (no false refusal). */
#include <string.h>

struct digest {
    unsigned char state[64];
    unsigned length;
};

int digest_finish(struct digest *context, unsigned char *out);

static int md5_final(struct digest *context, unsigned char *out) {
    int r = digest_finish(context, out);
    memset(context, 0, sizeof *context);
    return r;
}

static int sha1_final(struct digest *context, unsigned char *out) {
    int r = digest_finish(context, out);
    memset(context, 0, sizeof *context);
    return r;
}

int (*const digest_finals[2])(struct digest *, unsigned char *) = {md5_final, sha1_final};
