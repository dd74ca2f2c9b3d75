/*
 * compass-hook-client: the native fast path of the compass-hooks hook launcher.
 *
 *   compass-hook-client PYTHON SCRIPT EVENT     (what hooks/compass-hook.sh runs)
 *   compass-hook-client --version
 *
 * Why it exists: a Python hook client costs a Python start-up (~25 ms here) on every
 * prompt before it can even talk to the warm worker. This client starts in about a
 * millisecond, hands the hook's stdin to the worker (op "hook_fast") and writes the
 * worker's answer -- the exact stdout text, rendered by compass_hooks.worker.hooks.output --
 * to stdout. Nothing is decided here: the worker parses, normalises and renders.
 *
 * Everything unusual goes to the Python client, which is always correct and fails
 * open: no data dir in the environment, no endpoint file (no worker yet), a socket we
 * do not trust, a worker of another version, a warming worker, an error answer, stdin
 * too large. The bytes already read from stdin are replayed to it on a pipe, so it sees
 * exactly what Claude Code sent. If the worker accepted the request but did not answer
 * in time, the Python client is told (COMPASS_FAST_FAILED) instead of asking again:
 * it logs and counts the failure, and the hook still exits 0.
 *
 * Built by `compass-hook client build` (install.sh and the plugin bootstrap run it)
 * into the venv's bin/, with COMPASS_PROTOCOL and COMPASS_VERSION defined. POSIX C99.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef COMPASS_PROTOCOL
#error "build with -DCOMPASS_PROTOCOL=<n> -DCOMPASS_VERSION=\"<x.y.z>\" (compass-hook client build)"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)
#define STDIN_MAX (16u << 20)  /* = the worker's MAX_LINE: beyond it Python drains and fails open */
#define ANSWER_MAX (8u << 20)
#define REPLAY_INLINE 16384u   /* fits any pipe buffer: written before exec, no helper process */
#define ENDPOINT_NAME "/run/fast-endpoint"

struct buf {
    char *p;
    size_t len, cap;
};

static struct buf in;        /* stdin as read so far */
static int in_eof;           /* all of stdin is in `in` */
static const char *py, *script, *event_arg;

static int grow(struct buf *b, size_t need) {
    if (b->len + need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 8192;
    while (cap < b->len + need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put(struct buf *b, const char *s, size_t n) {
    if (grow(b, n)) return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

static int puts_(struct buf *b, const char *s) { return put(b, s, strlen(s)); }

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- the Python client: replay stdin and exec it ------------------------------------------ */

static void replay_rest(int out) {
    char chunk[65536];
    write_all(out, in.p, in.len);
    while (!in_eof) {
        ssize_t r = read(0, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || write_all(out, chunk, (size_t)r)) break;
    }
}

static void python(const char *why, const char *failed) __attribute__((noreturn));
static void python(const char *why, const char *failed) {
    int fds[2];
    if (failed) setenv("COMPASS_FAST_FAILED", failed, 1);
    else if (why) setenv("COMPASS_FAST_FALLBACK", why, 1);
    if (in.len == 0 && !in_eof) {
        /* nothing read yet: Python reads Claude Code's stdin itself */
    } else if (pipe(fds) == 0) {
        if (in_eof && in.len <= REPLAY_INLINE) {
            write_all(fds[1], in.p, in.len);
        } else {
            pid_t pid = fork();
            if (pid == 0) { /* feeder: must not hold Claude Code's stdout/stderr open */
                int devnull = open("/dev/null", O_WRONLY);
                if (devnull >= 0) {
                    dup2(devnull, 1);
                    dup2(devnull, 2);
                }
                close(fds[0]);
                replay_rest(fds[1]);
                _exit(0);
            }
            if (pid < 0) _exit(0);
        }
        close(fds[1]);
        dup2(fds[0], 0);
        close(fds[0]);
    }
    char *argv[] = {(char *)py, "-I", "-S", (char *)script, (char *)event_arg, NULL};
    execv(py, argv);
    _exit(0); /* no Python either: fail open */
}

/* ---- small parsers ------------------------------------------------------------------------ */

static const char *canonical(const char *e) {
    static const char *names[][2] = {
        {"session-start", "SessionStart"}, {"user-prompt-submit", "UserPromptSubmit"},
        {"pre-tool-use", "PreToolUse"}, {"pre-compact", "PreCompact"}, {"stop", "Stop"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(e, names[i][0]) || !strcmp(e, names[i][1])) return names[i][1];
    return NULL;
}

static int seconds_ms(const char *s, int *ms) {
    char *end;
    if (!s || !*s) return -1;
    double v = strtod(s, &end);
    if (end == s || v <= 0 || v > 3600) return -1;
    *ms = (int)(v * 1000.0 + 0.5);
    return 0;
}

/* "key=value" lines written by the worker when it is ready (compass_hooks/worker/hooks/fast.py). */
struct endpoint {
    char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int connect_ms, request_ms;
};

static int read_endpoint(const char *data, struct endpoint *ep) {
    char path[4096], text[4096];
    if (snprintf(path, sizeof path, "%s%s", data, ENDPOINT_NAME) >= (int)sizeof path) return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return -1;
    text[n] = 0;
    ep->socket[0] = 0;
    ep->connect_ms = 500;
    ep->request_ms = 2500;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        const char *v = eq + 1;
        if (!strcmp(line, "socket")) {
            if (strlen(v) >= sizeof ep->socket) return -1;
            strcpy(ep->socket, v);
        } else if (!strcmp(line, "connect_timeout_s")) {
            seconds_ms(v, &ep->connect_ms);
        } else if (!strcmp(line, "request_timeout_s")) {
            seconds_ms(v, &ep->request_ms);
        }
    }
    return ep->socket[0] ? 0 : -1;
}

/* Same rule as compass_hooks.worker.client.socket_problem: ours, in a dir only we can write. */
static int socket_trusted(const char *path) {
    struct stat st;
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (lstat(path, &st) || !S_ISSOCK(st.st_mode) || st.st_uid != getuid()) return 0;
    strcpy(dir, path);
    char *slash = strrchr(dir, '/');
    if (!slash) return 0;
    *(slash == dir ? slash + 1 : slash) = 0;
    if (lstat(dir, &st) || st.st_uid != getuid() || (st.st_mode & 022)) return 0;
    return 1;
}

static int peer_is_me(int fd) {
#if defined(SO_PEERCRED)
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == getuid();
#else
    uid_t uid;
    gid_t gid;
    return getpeereid(fd, &uid, &gid) == 0 && uid == getuid();
#endif
}

/* JSON string body for `s` (quotes excluded). Non-ASCII bytes pass through: the worker
 * decodes the frame as UTF-8, and invalid UTF-8 gets an error answer (-> Python). */
static int json_escape(struct buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (grow(b, n + n / 8 + 16)) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            if (put(b, e, 2)) return -1;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (put(b, e, 6)) return -1;
        } else if (put(b, (const char *)&c, 1)) {
            return -1;
        }
    }
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static long hex4(const char *p, const char *end) {
    if (end - p < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

static void utf8(struct buf *out, unsigned long cp) {
    char e[4];
    size_t n;
    if (cp < 0x80) { e[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { e[0] = (char)(0xC0 | cp >> 6); e[1] = (char)(0x80 | (cp & 63)); n = 2; }
    else if (cp < 0x10000) {
        e[0] = (char)(0xE0 | cp >> 12); e[1] = (char)(0x80 | (cp >> 6 & 63)); e[2] = (char)(0x80 | (cp & 63)); n = 3;
    } else {
        e[0] = (char)(0xF0 | cp >> 18); e[1] = (char)(0x80 | (cp >> 12 & 63));
        e[2] = (char)(0x80 | (cp >> 6 & 63)); e[3] = (char)(0x80 | (cp & 63)); n = 4;
    }
    put(out, e, n);
}

/* Decode the JSON string starting just after its opening quote. -1 on anything malformed. */
static int json_unescape(const char *p, const char *end, struct buf *out) {
    while (p < end) {
        char c = *p++;
        if (c == '"') return 0;
        if (c != '\\') {
            if (put(out, &c, 1)) return -1;
            continue;
        }
        if (p >= end) return -1;
        char e = *p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char repl[] = "\"\\/\b\f\n\r\t";
            if (put(out, &repl[simple - "\"\\/bfnrt"], 1)) return -1;
        } else if (e == 'u') {
            long cp = hex4(p, end);
            if (cp < 0) return -1;
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
                long lo = (end - p >= 6 && p[0] == '\\' && p[1] == 'u') ? hex4(p + 2, end) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return -1;
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return -1;
            }
            utf8(out, (unsigned long)cp);
        } else {
            return -1;
        }
    }
    return -1;
}

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void set_timeout(int fd, int opt, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("compass-hook-client %s protocol %d\n", COMPASS_VERSION, COMPASS_PROTOCOL);
        return 0;
    }
    if (argc != 4) return 0; /* not called by the launcher: nothing to fall back to */
    py = argv[1];
    script = argv[2];
    event_arg = argv[3];
    signal(SIGPIPE, SIG_IGN);

    const char *off = getenv("COMPASS_FAST_CLIENT");
    if (off && !strcmp(off, "0")) python(NULL, NULL);
    const char *event = canonical(event_arg);
    if (!event) python("unknown event", NULL);

    for (;;) { /* all of stdin (Claude Code closes it), up to the worker's frame limit */
        if (in.len > STDIN_MAX) python("stdin larger than the fast path takes", NULL);
        if (grow(&in, 65536)) python("out of memory", NULL);
        ssize_t r = read(0, in.p + in.len, in.cap - in.len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) python("cannot read stdin", NULL);
        if (r == 0) break;
        in.len += (size_t)r;
    }
    in_eof = 1;

    /* The user's one store, by compass_hooks/dirs.py's rule: $COMPASS_HOME, else the platform's
     * user data dir. Anything unusual (~ to expand, no HOME) is the Python client's to handle. */
    static char data_buf[4096];
    const char *data = getenv("COMPASS_HOME");
    if (!data || !*data) {
        const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
        int n;
#ifdef __APPLE__
        xdg = NULL;
        n = home && *home ? snprintf(data_buf, sizeof data_buf, "%s/Library/Application Support/compass-hooks", home) : -1;
#else
        if (xdg && *xdg) n = snprintf(data_buf, sizeof data_buf, "%s/compass-hooks", xdg);
        else n = home && *home ? snprintf(data_buf, sizeof data_buf, "%s/.local/share/compass-hooks", home) : -1;
#endif
        if (n < 0 || (size_t)n >= sizeof data_buf) python("no data dir from the environment", NULL);
        data = data_buf;
    }
    if (data[0] != '/') python("data dir is not an absolute path", NULL);
    struct endpoint ep;
    if (read_endpoint(data, &ep)) python("no worker endpoint", NULL);
    const char *sock_override = getenv("COMPASS_SOCKET");
    if (sock_override && *sock_override) {
        if (strlen(sock_override) >= sizeof ep.socket) python("socket path too long", NULL);
        strcpy(ep.socket, sock_override);
    }
    seconds_ms(getenv("COMPASS_CONNECT_TIMEOUT"), &ep.connect_ms);
    seconds_ms(getenv("COMPASS_REQUEST_TIMEOUT"), &ep.request_ms);
    if (!socket_trusted(ep.socket)) python("socket missing or not trusted", NULL);

    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) python("socket() failed", NULL);
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, ep.socket);
    set_timeout(fd, SO_SNDTIMEO, ep.connect_ms); /* bounds a connect to a full backlog */
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr)) python("no worker on the socket", NULL);
    if (!peer_is_me(fd)) python("the socket's peer is another user", NULL);

    long deadline = now_ms() + ep.request_ms;
    struct buf req = {0};
    int failed = puts_(&req, "{\"id\":1,\"op\":\"hook_fast\",\"args\":{\"event\":\"") || puts_(&req, event) ||
             puts_(&req, "\",\"script\":\"") || json_escape(&req, script, strlen(script)) ||
             puts_(&req, "\",\"stdin\":\"") || json_escape(&req, in.p, in.len) ||
             puts_(&req, "\"},\"wait\":0,\"client\":[") ||
             puts_(&req, STR(COMPASS_PROTOCOL) ",\"" COMPASS_VERSION "\"]}\n");
    if (failed) python("out of memory", NULL);
    set_timeout(fd, SO_SNDTIMEO, ep.request_ms);
    if (write_all(fd, req.p, req.len)) python("sending to the worker failed", NULL);

    struct buf ans = {0};
    char *nl = NULL;
    while (!nl) {
        long left = deadline - now_ms();
        if (left <= 0) python(NULL, "the worker did not answer within hooks.request_timeout_s");
        struct pollfd pfd = {fd, POLLIN, 0};
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) python(NULL, "the worker did not answer within hooks.request_timeout_s");
        if (pr < 0 || grow(&ans, 65536) || ans.len > ANSWER_MAX) python("reading the answer failed", NULL);
        ssize_t r = read(fd, ans.p + ans.len, ans.cap - ans.len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) python("the worker closed the connection", NULL);
        nl = memchr(ans.p + ans.len, '\n', (size_t)r);
        ans.len += (size_t)r;
    }
    close(fd);

    /* protocol.encode writes {"id":1,"ok":true,"result":{"stdout":"..."}}: anything else
     * (an error, {"fallback": why}) is the Python client's to handle. */
    static const char want[] = "{\"id\":1,\"ok\":true,\"result\":{\"stdout\":\"";
    if ((size_t)(nl - ans.p) < sizeof want - 1 || memcmp(ans.p, want, sizeof want - 1))
        python("the worker did not answer with stdout", NULL);
    struct buf out = {0};
    if (json_unescape(ans.p + sizeof want - 1, nl, &out))
        python("malformed answer", NULL);
    if (out.len) write_all(1, out.p, out.len); /* a closed stdout is Claude Code's business */
    return 0;
}
