/* demo-v1: proleptic Gregorian date arithmetic: day numbers, weekdays, ISO weeks, month math, Easter, parsing */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct { int year, month, day; } date;
typedef struct { int year, week; } iso_week;

static const int cumulative_days[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in_month(int y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return (m == 2 && is_leap(y)) ? 29 : dim[m - 1];
}

static bool date_valid(date d)
{
    return d.month >= 1 && d.month <= 12 && d.day >= 1 && d.day <= days_in_month(d.year, d.month);
}

/* floor division for possibly negative numerators */
static long floor_div(long a, long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* number of leap years in [1, y] (y may be <= 0) */
static long leaps_through(long y) { return floor_div(y, 4) - floor_div(y, 100) + floor_div(y, 400); }

/* days since 1970-01-01 */
long days_from_civil(date d)
{
    long y = d.year;
    long days = 365 * (y - 1970) + (leaps_through(y - 1) - leaps_through(1969));
    days += cumulative_days[d.month - 1] + (d.month > 2 && is_leap(d.year)) + d.day - 1;
    return days;
}

date civil_from_days(long n)
{
    /* estimate the year, then correct by stepping */
    long y = 1970 + floor_div(n * 400, 146097);
    date d = {(int)y, 1, 1};
    while (days_from_civil(d) > n) d.year--;
    for (;;) {
        date next = {d.year + 1, 1, 1};
        if (days_from_civil(next) > n) break;
        d.year++;
    }
    long rem = n - days_from_civil(d);
    int m = 12;
    while (cumulative_days[m - 1] + (m > 2 && is_leap(d.year)) > rem) m--;
    d.month = m;
    d.day = (int)(rem - cumulative_days[m - 1] - (m > 2 && is_leap(d.year))) + 1;
    return d;
}

/* 0 = Monday ... 6 = Sunday; 1970-01-01 was a Thursday */
int weekday(date d)
{
    long w = (days_from_civil(d) + 3) % 7;
    return (int)(w < 0 ? w + 7 : w);
}

/* Zeller's congruence as an independent weekday reference (returns 0 = Monday) */
static int weekday_zeller(date d)
{
    int m = d.month, y = d.year;
    if (m < 3) { m += 12; y--; }
    int k = ((y % 100) + 100) % 100;
    int j = (int)floor_div(y, 100);
    int h = (d.day + (13 * (m + 1)) / 5 + k + k / 4 + (int)floor_div(j, 4) + 5 * j) % 7;
    if (h < 0) h += 7;
    return (h + 5) % 7; /* Zeller: 0 = Saturday */
}

static int day_of_year(date d) { return cumulative_days[d.month - 1] + (d.month > 2 && is_leap(d.year)) + d.day; }

iso_week iso_week_of(date d)
{
    /* the ISO week belongs to the year containing its Thursday */
    long n = days_from_civil(d);
    long thursday = n - weekday(d) + 3;
    date t = civil_from_days(thursday);
    iso_week w = {t.year, (day_of_year(t) - 1) / 7 + 1};
    return w;
}

date add_months(date d, int months)
{
    long total = (long)d.year * 12 + (d.month - 1) + months;
    date r;
    r.year = (int)floor_div(total, 12);
    r.month = (int)(total - (long)r.year * 12) + 1;
    int dim = days_in_month(r.year, r.month);
    r.day = d.day > dim ? dim : d.day;
    return r;
}

/* Gregorian Easter Sunday via the anonymous computus */
date easter(int y)
{
    int a = y % 19, b = y / 100, c = y % 100, d = b / 4, e = b % 4;
    int f = (b + 8) / 25, g = (b - f + 1) / 3, h = (19 * a + b - d - g + 15) % 30;
    int i = c / 4, k = c % 4, l = (32 + 2 * e + 2 * i - h - k) % 7;
    int m = (a + 11 * h + 22 * l) / 451;
    date r = {y, (h + l - 7 * m + 114) / 31, ((h + l - 7 * m + 114) % 31) + 1};
    return r;
}

/* Monday..Friday days in [a, b) */
static long business_days(date a, date b)
{
    long na = days_from_civil(a), nb = days_from_civil(b);
    if (nb <= na) return 0;
    long span = nb - na, full = span / 7, count = full * 5;
    int wd = weekday(a);
    for (long i = 0; i < span % 7; i++)
        if ((wd + i) % 7 < 5) count++;
    return count;
}

/* strict YYYY-MM-DD parser */
static bool parse_date(const char *s, date *out)
{
    int parts[3] = {0, 0, 0};
    static const int widths[3] = {4, 2, 2};
    for (int p = 0; p < 3; p++) {
        for (int k = 0; k < widths[p]; k++, s++) {
            if (*s < '0' || *s > '9') return false;
            parts[p] = parts[p] * 10 + (*s - '0');
        }
        if (p < 2 && *s++ != '-') return false;
    }
    if (*s != '\0') return false;
    date d = {parts[0], parts[1], parts[2]};
    if (!date_valid(d)) return false;
    *out = d;
    return true;
}

static void format_date(date d, char *buf, size_t cap) { snprintf(buf, cap, "%04d-%02d-%02d", d.year, d.month, d.day); }

static bool same(date a, date b) { return a.year == b.year && a.month == b.month && a.day == b.day; }

int main(void)
{
    int failures = 0;

    /* walk every day from 1896-01-01 to 2104-12-31 (three century years) against a naive calendar */
    date d = {1896, 1, 1};
    long n = days_from_civil(d);
    int wd = weekday(d);
    long walked = 0;
    while (d.year <= 2104) {
        if (days_from_civil(d) != n || !same(civil_from_days(n), d)) failures++;
        if (weekday(d) != wd || weekday_zeller(d) != wd) failures++;
        /* naive increment */
        d.day++;
        if (d.day > days_in_month(d.year, d.month)) {
            d.day = 1;
            if (++d.month > 12) { d.month = 1; d.year++; }
        }
        n++;
        wd = (wd + 1) % 7;
        walked++;
    }
    if (walked != 76336) failures++;

    static const struct { date d; long n; int wd; int iso_y, iso_w; } known[] = {
        {{1970, 1, 1}, 0, 3, 1970, 1},        {{2000, 1, 1}, 10957, 5, 1999, 52},
        {{2024, 2, 29}, 19782, 3, 2024, 9},   {{1900, 3, 1}, -25508, 3, 1900, 9},
        {{2100, 12, 31}, 47846, 4, 2100, 52}, {{1600, 2, 29}, -135081, 1, 1600, 9},
        {{2021, 1, 3}, 18630, 6, 2020, 53},   {{2024, 12, 30}, 20087, 0, 2025, 1},
        {{2016, 1, 1}, 16801, 4, 2015, 53},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        iso_week w = iso_week_of(known[i].d);
        if (days_from_civil(known[i].d) != known[i].n || weekday(known[i].d) != known[i].wd ||
            w.year != known[i].iso_y || w.week != known[i].iso_w)
            failures++;
    }

    date jan31 = {2023, 1, 31};
    if (!same(add_months(jan31, 1), (date){2023, 2, 28})) failures++;
    if (!same(add_months(jan31, 13), (date){2024, 2, 29})) failures++;
    if (!same(add_months(jan31, -2), (date){2022, 11, 30})) failures++;
    if (!same(add_months((date){2000, 5, 15}, -121), (date){1990, 4, 15})) failures++;

    if (!same(easter(2024), (date){2024, 3, 31}) || !same(easter(2025), (date){2025, 4, 20}) ||
        !same(easter(2000), (date){2000, 4, 23}) || !same(easter(1818), (date){1818, 3, 22}))
        failures++;
    for (int y = 1600; y <= 2400; y++) {
        date e = easter(y);
        if (weekday(e) != 6 || !date_valid(e) || e.month < 3 || e.month > 4) failures++;
    }

    if (business_days((date){2024, 1, 1}, (date){2024, 12, 31}) != 261) failures++;
    if (business_days((date){1999, 7, 4}, (date){2023, 3, 15}) != 6182) failures++;

    static const char *const good[] = {"2024-02-29", "0001-01-01", "1999-12-31"};
    static const char *const bad[] = {"2023-02-29", "2024-13-01", "2024-1-01", "2024-01-01x", "abcd-ef-gh", "2024-04-31"};
    char buf[16];
    for (size_t i = 0; i < 3; i++) {
        date p;
        if (!parse_date(good[i], &p)) { failures++; continue; }
        format_date(p, buf, sizeof buf);
        if (strcmp(buf, good[i]) != 0) failures++;
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        date p;
        if (parse_date(bad[i], &p)) failures++;
    }

    printf("date_calendar: %ld days walked, %d failures\n", walked, failures);
    return failures == 0 ? 0 : 1;
}
