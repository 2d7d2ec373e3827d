/* demo-v1: RFC 4180-style CSV state-machine parser with callbacks and per-region aggregation */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef enum { CSV_OK, CSV_ERR_QUOTE, CSV_ERR_FIELD_TOO_LONG, CSV_ERR_CALLBACK } csv_status;

typedef struct {
    bool (*on_field)(void *ctx, const char *text, size_t len, size_t col);
    bool (*on_row)(void *ctx, size_t row, size_t ncols);
} csv_callbacks;

enum csv_state { ST_FIELD_START, ST_UNQUOTED, ST_QUOTED, ST_QUOTE_SEEN };

#define FIELD_MAX 128

csv_status csv_parse(const char *data, size_t len, char delim, const csv_callbacks *cb, void *ctx,
                     size_t *rows_out)
{
    char field[FIELD_MAX];
    size_t flen = 0, col = 0, row = 0;
    enum csv_state st = ST_FIELD_START;
    bool row_has_data = false;

    for (size_t i = 0; i <= len; i++) {
        int c = i < len ? (unsigned char)data[i] : -1; /* -1 marks end of input */
        bool end_field = false, end_row = false;

        switch (st) {
        case ST_FIELD_START:
            if (c == '"') { st = ST_QUOTED; row_has_data = true; break; }
            /* fall through */
        case ST_UNQUOTED:
            if (c == delim) end_field = true;
            else if (c == '\n' || c == -1) end_row = true;
            else if (c == '\r' && i + 1 < len && data[i + 1] == '\n') { /* swallow CR of CRLF */ }
            else if (c == '"' && st == ST_UNQUOTED) return CSV_ERR_QUOTE;
            else {
                if (flen + 1 >= FIELD_MAX) return CSV_ERR_FIELD_TOO_LONG;
                field[flen++] = (char)c;
                st = ST_UNQUOTED;
                row_has_data = true;
            }
            break;
        case ST_QUOTED:
            if (c == -1) return CSV_ERR_QUOTE;
            if (c == '"') { st = ST_QUOTE_SEEN; break; }
            if (flen + 1 >= FIELD_MAX) return CSV_ERR_FIELD_TOO_LONG;
            field[flen++] = (char)c;
            break;
        case ST_QUOTE_SEEN:
            if (c == '"') {
                if (flen + 1 >= FIELD_MAX) return CSV_ERR_FIELD_TOO_LONG;
                field[flen++] = '"';
                st = ST_QUOTED;
            } else if (c == delim) end_field = true;
            else if (c == '\n' || c == -1) end_row = true;
            else if (c == '\r' && i + 1 < len && data[i + 1] == '\n') { }
            else return CSV_ERR_QUOTE;
            break;
        }

        if (end_field || end_row) {
            if (end_row && !row_has_data && col == 0) {
                /* blank line (or trailing newline at EOF): skip */
                st = ST_FIELD_START;
                continue;
            }
            field[flen] = '\0';
            if (!cb->on_field(ctx, field, flen, col)) return CSV_ERR_CALLBACK;
            flen = 0;
            col++;
            st = ST_FIELD_START;
            if (end_field) row_has_data = true;
            if (end_row) {
                if (!cb->on_row(ctx, row, col)) return CSV_ERR_CALLBACK;
                row++;
                col = 0;
                row_has_data = false;
            }
        }
    }
    *rows_out = row;
    return CSV_OK;
}

/* ---- aggregation client ---- */

#define MAX_COLS 6
#define MAX_REGIONS 8

typedef struct {
    char cells[MAX_COLS][FIELD_MAX];
    size_t ncells;
    struct { char name[16]; long units; long cents; int orders; } regions[MAX_REGIONS];
    size_t nregions;
    size_t notes_with_quotes, multiline_notes;
} sales_ctx;

static bool parse_long(const char *s, long *out)
{
    long v = 0;
    if (*s == '\0') return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000) return false;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

static bool sales_field(void *vctx, const char *text, size_t len, size_t col)
{
    sales_ctx *ctx = vctx;
    if (col >= MAX_COLS) return false;
    memcpy(ctx->cells[col], text, len + 1);
    ctx->ncells = col + 1;
    return true;
}

static bool sales_row(void *vctx, size_t row, size_t ncols)
{
    sales_ctx *ctx = vctx;
    if (ncols != 5) return false;
    if (row == 0) return strcmp(ctx->cells[0], "region") == 0 && strcmp(ctx->cells[4], "note") == 0;
    long units, price;
    if (!parse_long(ctx->cells[2], &units) || !parse_long(ctx->cells[3], &price)) return false;
    size_t r;
    for (r = 0; r < ctx->nregions; r++)
        if (strcmp(ctx->regions[r].name, ctx->cells[0]) == 0) break;
    if (r == ctx->nregions) {
        size_t nlen = strlen(ctx->cells[0]);
        if (r == MAX_REGIONS || nlen >= sizeof ctx->regions[r].name) return false;
        memcpy(ctx->regions[r].name, ctx->cells[0], nlen + 1);
        ctx->regions[r].units = ctx->regions[r].cents = 0;
        ctx->regions[r].orders = 0;
        ctx->nregions++;
    }
    ctx->regions[r].units += units;
    ctx->regions[r].cents += units * price;
    ctx->regions[r].orders++;
    if (strchr(ctx->cells[4], '"')) ctx->notes_with_quotes++;
    if (strchr(ctx->cells[4], '\n')) ctx->multiline_notes++;
    return true;
}

static const char sales_csv[] =
    "region,product,units,unit_price_cents,note\r\n"
    "north,widget,12,250,\r\n"
    "south,\"gadget, large\",3,1999,\"customer said \"\"rush\"\"\"\r\n"
    "east,sprocket,40,75,bulk\r\n"
    "north,\"gear\",7,1210,\"two\nlines\"\r\n"
    "west,widget,1,250,\r\n"
    "\r\n"
    "south,widget,19,245,discounted\r\n"
    "east,\"flux \"\"cap\"\"\",2,88800,\"\"\r\n"
    "north,sprocket,100,70,\"net, 30\"\r\n"
    "west,gear,5,1190,\"said \"\"ok\"\"\nthen left\"\r\n"
    "south,bolt,250,4,\r\n"
    "east,bolt,1000,3,\"pallet\"\r\n"
    "north,nut,333,2,last";

/* ---- generic field-counting client for edge cases ---- */

typedef struct { size_t fields, rows, total_len; } count_ctx;

static bool count_field(void *vctx, const char *text, size_t len, size_t col)
{
    count_ctx *c = vctx;
    (void)col;
    c->fields++;
    c->total_len += len;
    return strlen(text) == len;
}

static bool count_row(void *vctx, size_t row, size_t ncols)
{
    count_ctx *c = vctx;
    (void)row;
    (void)ncols;
    c->rows++;
    return true;
}

struct edge_case { const char *text; char delim; csv_status status; size_t rows, fields, total_len; };

static const struct edge_case edges[] = {
    {"a,b,c\n1,2,3\n", ',', CSV_OK, 2, 6, 6},
    {"a,,c\n,\n", ',', CSV_OK, 2, 5, 2},
    {"\"\"\n", ',', CSV_OK, 1, 1, 0},
    {"x;\"y;z\";w", ';', CSV_OK, 1, 3, 5},
    {"\"unterminated\n", ',', CSV_ERR_QUOTE, 0, 0, 0},
    {"ab\"c\n", ',', CSV_ERR_QUOTE, 0, 0, 0},
    {"\"ab\"c\n", ',', CSV_ERR_QUOTE, 0, 0, 0},
    {"\n\n\nonly\n\n", ',', CSV_OK, 1, 1, 4},
    {"", ',', CSV_OK, 0, 0, 0},
    {"tab\tsep\r\nr2\t\"q\"\"\"\r\n", '\t', CSV_OK, 2, 4, 10},
};

int main(void)
{
    static sales_ctx ctx;
    static const csv_callbacks sales_cb = {sales_field, sales_row};
    static const csv_callbacks count_cb = {count_field, count_row};
    static const struct { const char *name; long units, cents; int orders; } expect[] = {
        {"north", 452, 19136, 4}, {"south", 272, 11652, 3},
        {"east", 1042, 183600, 3}, {"west", 6, 6200, 2},
    };
    int failures = 0;
    size_t rows = 0;

    csv_status s = csv_parse(sales_csv, sizeof sales_csv - 1, ',', &sales_cb, &ctx, &rows);
    if (s != CSV_OK || rows != 13 || ctx.nregions != 4) failures++;
    for (size_t i = 0; i < 4 && i < ctx.nregions; i++) {
        if (strcmp(ctx.regions[i].name, expect[i].name) != 0 || ctx.regions[i].units != expect[i].units ||
            ctx.regions[i].cents != expect[i].cents || ctx.regions[i].orders != expect[i].orders)
            failures++;
    }
    if (ctx.notes_with_quotes != 2 || ctx.multiline_notes != 2) failures++;

    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        count_ctx c = {0, 0, 0};
        size_t r = 0;
        const struct edge_case *e = &edges[i];
        s = csv_parse(e->text, strlen(e->text), e->delim, &count_cb, &c, &r);
        if (s != e->status) { failures++; continue; }
        if (s == CSV_OK && (r != e->rows || c.rows != e->rows || c.fields != e->fields ||
                            c.total_len != e->total_len))
            failures++;
    }

    printf("csv_parser: %zu sales rows, %zu regions, %d failures\n", rows, ctx.nregions, failures);
    return failures == 0 ? 0 : 1;
}
