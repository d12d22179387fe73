#!/usr/bin/python3
"""regdiff.py: PostgreSQL's own regression queries against lsm_fdw tables.

Runs the SQL files of PostgreSQL's regression suite (src/test/regress/sql of
a PostgreSQL 15 source tree) statement by statement against two databases in
lockstep: 'ref', where the suite's tables are heap tables, and 'lsm', where
the ones with a unique column (FOREIGN below) are lsm_fdw foreign tables
with the same rows.  Prints every statement whose outcome differs (rows,
status or SQLSTATE) and a count per file.  Results are compared as sorted
multisets unless the statement has ORDER BY; statements with LIMIT, OFFSET
or FETCH FIRST compare only their row counts.  Expect some differences that
are not defects: queries whose answer depends on the physical row order
(window frames over peers, LIMIT or cursors without ORDER BY), DDL that
foreign tables do not support (CREATE INDEX, ALTER TABLE SET), and
statements that follow such an error in the same transaction.  See
test/regdiff/README.md.

usage: regdiff.py --src PGSRC [--host H] [--port P] [--setup] [--set GUC=V]
                  FILE_OR_TEST ...
"""
import argparse
import os
import re
import sys

import psycopg2

REGRESS = None  # <source tree>/src/test/regress (--src)

# table -> key column: replaced by foreign tables in the lsm database
FOREIGN = {
    'int2_tbl': 'f1', 'int4_tbl': 'f1', 'text_tbl': 'f1',
    'onek': 'unique1', 'onek2': 'unique1', 'tenk1': 'unique1',
    'tenk2': 'unique1',
}


SETTINGS = []


def split_statements(text):
    """Yields (statement, skip) from psql input; skip if it uses psql
    variables or meta-commands."""
    i, n = 0, len(text)
    buf = []
    skip = False
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and not ''.join(buf).strip():
            # a meta-command line at statement start
            m = re.match(r'[ \t]*\\', text[i:])
            if m:
                j = text.find('\n', i)
                j = n if j < 0 else j
                line = text[i:j]
                if line.strip().startswith('\\.'):
                    pass
                i = j + 1
                continue
        at_line_start = False
        if c == '\n':
            at_line_start = True
            buf.append(c)
            i += 1
        elif text.startswith('--', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            i = j
        elif text.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith('/*', j):
                    depth += 1
                    j += 2
                elif text.startswith('*/', j):
                    depth -= 1
                    j += 2
                else:
                    j += 1
            i = j
        elif c == "'":
            j = i + 1
            esc = i > 0 and text[i - 1] in 'eE'
            while j < n:
                if esc and text[j] == '\\':
                    j += 2
                    continue
                if text[j] == "'":
                    if j + 1 < n and text[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i:j + 1])
            i = j + 1
        elif c == '"':
            j = text.find('"', i + 1)
            j = n - 1 if j < 0 else j
            buf.append(text[i:j + 1])
            i = j + 1
        elif c == '$' and re.match(r'\$([A-Za-z_][A-Za-z_0-9]*)?\$', text[i:]) \
                and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            tag = re.match(r'\$([A-Za-z_][A-Za-z_0-9]*)?\$', text[i:]).group(0)
            j = text.find(tag, i + len(tag))
            j = n - len(tag) if j < 0 else j
            buf.append(text[i:j + len(tag)])
            i = j + len(tag)
        elif c == ':' and re.match(r":['\"]?[A-Za-z_]", text[i:]) and \
                not text.startswith('::', i) and (i == 0 or text[i - 1] != ':'):
            skip = True
            buf.append(c)
            i += 1
        elif c == '\\':
            # \gset, \g, \gexec ... end the statement
            j = text.find('\n', i)
            j = n if j < 0 else j
            stmt = ''.join(buf).strip()
            if stmt:
                yield stmt, True
            buf, skip = [], False
            i = j
        elif c == ';':
            stmt = ''.join(buf).strip()
            if stmt:
                yield stmt, skip
            buf, skip = [], False
            i += 1
            # COPY ... FROM stdin: skip the data up to \.
            if re.match(r'(?is)^copy\b.*\bfrom\s+stdin', stmt):
                j = text.find('\n\\.', i)
                if j >= 0:
                    i = j + 3
        else:
            buf.append(c)
            i += 1
    stmt = ''.join(buf).strip()
    if stmt:
        yield stmt, skip


# tests of the schedule that are not run by default: they need the regress
# library, restart or inspect the whole cluster, or print what differs by
# design (EXPLAIN, psql's own output)
SKIP = {'test_setup', 'tablespace', 'numeric_big', 'stats', 'event_trigger',
        'prepared_xacts', 'database', 'oidjoins', 'sanity_check', 'psql',
        'psql_crosstab', 'maintain_every'}


def schedule():
    """The tests of parallel_schedule, in order, less SKIP."""
    tests = []
    for line in open(os.path.join(REGRESS, 'parallel_schedule')):
        if line.startswith('test:'):
            tests += [t for t in line[5:].split() if t not in SKIP]
    return tests


def connect(args, db):
    c = psycopg2.connect(host=args.host, port=args.port, dbname=db,
                         user='postgres')
    c.autocommit = True
    cur = c.cursor()
    cur.execute("SET statement_timeout = '60s'")
    cur.execute("SET extra_float_digits = 0")
    for g in SETTINGS:
        cur.execute('SET ' + g)
    return c


def run(conn, stmt):
    cur = conn.cursor()
    try:
        cur.execute(stmt)
        rows = None
        if cur.description is not None:
            rows = [tuple(r) for r in cur.fetchall()]
        return ('ok', cur.statusmessage, rows)
    except psycopg2.Error as e:
        return ('error', e.pgcode, str(e).strip().split('\n')[0])
    except Exception as e:  # noqa
        return ('pyerror', type(e).__name__, str(e))


def norm(rows, ordered):
    rs = [tuple(x.replace("'lsm'", "'ref'") for x in r) for r in [tuple(repr(bytes(v)) if isinstance(v, memoryview) else repr(v) for v in r) for r in rows]]
    return rs if ordered else sorted(rs)


def compare(stmt, a, b):
    """None if equal, else a description."""
    if a[0] != b[0]:
        return 'ref %s / lsm %s' % (a[:3], b[:3])
    if a[0] == 'error':
        if a[1] != b[1]:
            return 'errors differ: ref %s %s / lsm %s %s' % (a[1], a[2], b[1], b[2])
        return None
    if a[0] == 'pyerror':
        return None
    if a[1] != b[1] and not a[1].startswith('SELECT'):
        return 'status: ref %s / lsm %s' % (a[1], b[1])
    if a[2] is None and b[2] is None:
        return None
    if a[2] is None or b[2] is None:
        return 'rows vs none'
    low = stmt.lower()
    ordered = 'order by' in low and 'limit' not in low
    ra, rb = norm(a[2], ordered), norm(b[2], ordered)
    if ra == rb:
        return None
    if 'limit' in low or ' offset' in low or 'fetch first' in low:
        if len(ra) == len(rb):
            return None  # order-dependent LIMIT without a total order
    if ordered and sorted(ra) == sorted(rb):
        return 'same rows, different order (%d rows)' % len(ra)
    sa, sb = set(ra), set(rb)
    return 'rows differ: ref %d lsm %d; only ref %s; only lsm %s' % (
        len(ra), len(rb), sorted(sa - sb)[:3], sorted(sb - sa)[:3])


def setup(args):
    conn = psycopg2.connect(host=args.host, port=args.port, dbname='postgres',
                            user='postgres')
    conn.autocommit = True
    cur = conn.cursor()
    for db in ('ref', 'lsm'):
        cur.execute('DROP DATABASE IF EXISTS %s' % db)
        cur.execute("CREATE DATABASE %s TEMPLATE template0" % db)
    conn.close()
    env = dict(os.environ, PG_ABS_SRCDIR=REGRESS, PG_LIBDIR='/nonexistent',
               PG_DLSUFFIX='.so')
    for db in ('ref', 'lsm'):
        rc = os.spawnvpe(os.P_WAIT, 'psql', [
            'psql', '-X', '-q', '-h', args.host, '-p', str(args.port),
            '-U', 'postgres', '-d', db, '-f', REGRESS + '/sql/test_setup.sql',
            '-o', '/dev/null'], env)
    c = connect(args, 'lsm')
    cur = c.cursor()
    cur.execute('CREATE EXTENSION IF NOT EXISTS fdw')
    cur.execute('CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw')
    for t, key in FOREIGN.items():
        cur.execute("""SELECT string_agg(quote_ident(attname) || ' ' ||
                        format_type(atttypid, atttypmod) ||
                        CASE WHEN attname = %s THEN ' OPTIONS (key ''true'')'
                             ELSE '' END, ', ' ORDER BY attnum)
                       FROM pg_attribute WHERE attrelid = %s::regclass
                        AND attnum > 0 AND NOT attisdropped""", (key, t))
        cols = cur.fetchone()[0]
        cur.execute('ALTER TABLE %s RENAME TO %s_heap' % (t, t))
        cur.execute('CREATE FOREIGN TABLE %s (%s) SERVER lsm' % (t, cols))
        cur.execute('INSERT INTO %s SELECT * FROM %s_heap' % (t, t))
        cur.execute('DROP TABLE %s_heap CASCADE' % t)
        cur.execute('ANALYZE %s' % t)
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', default=os.environ.get('PG_SRC'),
                    help='PostgreSQL 15 source tree (or $PG_SRC)')
    ap.add_argument('--host', default=os.environ.get('PGHOST', '/tmp'))
    ap.add_argument('--port', type=int,
                    default=int(os.environ.get('PGPORT', '5432')))
    ap.add_argument('--setup', action='store_true')
    ap.add_argument('-v', action='store_true')
    ap.add_argument('--set', action='append', default=[])
    ap.add_argument('files', nargs='*')
    args = ap.parse_args()
    SETTINGS.extend(args.set)
    global REGRESS
    if not args.src:
        ap.error('--src (or PG_SRC) is required')
    REGRESS = os.path.join(args.src, 'src/test/regress')
    if args.setup:
        setup(args)
    total_diff = 0
    for f in args.files or schedule():
        path = f if os.path.exists(f) else '%s/sql/%s.sql' % (REGRESS, f)
        text = open(path, encoding='utf-8', errors='replace').read()
        ref, lsm = connect(args, 'ref'), connect(args, 'lsm')
        n = nd = 0
        for stmt, skip in split_statements(text):
            if skip:
                continue
            low = stmt.lower().lstrip('( ')
            if low.startswith('explain'):
                continue
            n += 1
            a = run(ref, stmt)
            if re.match(r'(?is)^(create|drop|alter)\s+(role|user|group)\b', low):
                b = a
            else:
                b = run(lsm, stmt)
            d = compare(stmt, a, b)
            if d:
                nd += 1
                print('=== %s: %s\n%s\n--- %s\n' % (os.path.basename(path), d,
                                                  stmt[:1500], ''))
        total_diff += nd
        print('# %s: %d statements, %d differences' % (os.path.basename(path), n, nd))
        sys.stdout.flush()
        ref.close()
        lsm.close()
    print('# total differences: %d' % total_diff)


if __name__ == '__main__':
    main()
