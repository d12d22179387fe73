#!/usr/bin/python3
"""randdml.py: random DML against an lsm_fdw table and a heap table.

Runs random transactions (inserts, updates of values and keys, deletes,
savepoints rolled back or released, commits and rollbacks, reads by key,
key list, range and value) against an lsm_fdw table and a heap table whose
primary key is DEFERRABLE (so that, like lsm_fdw's key, it is checked when
a statement ends), with lsm_fdw.pending_memory at 1MB so that writes move
to disk; stops at the first statement whose outcome differs, or the first
round after which the tables differ.  Needs a server with the extension
installed and python3-psycopg2.

usage: randdml.py [--host H] [--port P] [--db D] [--seed N] [--rounds N] [-v]
"""
import argparse
import os
import random
import sys

import psycopg2

ap = argparse.ArgumentParser()
ap.add_argument('--host', default=os.environ.get('PGHOST', '/tmp'))
ap.add_argument('--port', type=int, default=int(os.environ.get('PGPORT', '5432')))
ap.add_argument('--db', default=os.environ.get('PGDATABASE', 'postgres'))
ap.add_argument('--seed', type=int, default=random.randrange(1 << 30))
ap.add_argument('--rounds', type=int, default=200)
ap.add_argument('-v', action='store_true', help='print every statement')
args = ap.parse_args()
seed = args.seed
rounds = args.rounds
rnd = random.Random(seed)
print('seed', seed)

def conn():
    c = psycopg2.connect(host=args.host, port=args.port, dbname=args.db,
                         user=os.environ.get('PGUSER', 'postgres'))
    c.autocommit = True
    return c.cursor()


cur = conn()
curs = {'rf': cur, 'rh': conn()}
cur.execute("create extension if not exists fdw")
cur.execute("set lsm_fdw.pending_memory = '1MB'")
cur.execute("drop server if exists randdml_srv cascade")
cur.execute("create server randdml_srv foreign data wrapper lsm_fdw")
cur.execute("drop foreign table if exists rf")
cur.execute("drop table if exists rh")
cur.execute("create foreign table rf (k int options (key 'true'), a int, b text) server randdml_srv")
cur.execute("create table rh (k int primary key deferrable, a int, b text)")

N = 20000


def both(sql):
    res = []
    for t in ('rf', 'rh'):
        q = sql.replace('T', t)
        cur = curs[t]
        try:
            cur.execute(q)
            rows = cur.fetchall() if cur.description else None
            res.append(('ok', cur.rowcount, sorted(rows) if rows else rows))
        except psycopg2.Error as e:
            res.append(('err', e.pgcode))
            # keep the transactions in step: the other side must fail too
    return res


def stmt():
    r = rnd.random()
    lo = rnd.randrange(N)
    hi = lo + rnd.choice([1, 10, 100, 1000, 5000, 20000])
    pad = "repeat('x', %d)" % rnd.choice([10, 100, 300])
    if r < 0.25:
        n = rnd.choice([1, 10, 1000, 8000])
        start = rnd.randrange(2 * N)
        if rnd.random() < 0.3:
            return ("insert into T select g, g %% 7, %s from generate_series(%d, %d) g"
                    % (pad, start, start + n))
        return ("insert into T select g, g %% 7, %s from generate_series(%d, %d) g"
                " where not exists (select 1 from T t where t.k = g)"
                % (pad, start, start + n))
    if r < 0.45:
        return "update T set a = a + 1, b = %s || k where k between %d and %d" % (pad, lo, hi)
    if r < 0.55:
        d = rnd.choice([1, -1, 3, 50000])
        return "update T set k = k + %d where k between %d and %d" % (d, lo, hi)
    if r < 0.70:
        return "delete from T where k between %d and %d and a %% 3 <> 1" % (lo, hi)
    if r < 0.80:
        return "select count(*), sum(a), sum(length(b)) from T where k between %d and %d" % (lo, hi)
    if r < 0.88:
        return "select k, a from T where a = %d and k < %d" % (rnd.randrange(7), lo)
    if r < 0.93:
        return "select k, a, b from T where k in (%d, %d, %d)" % (lo, hi, rnd.randrange(N))
    return "select k from T order by k desc limit 20"


def check(label):
    cur.execute("select count(*), coalesce(sum(k::bigint * 31 + a), 0), md5(coalesce(string_agg(b, ',' order by k), '')) from rf")
    a = cur.fetchone()
    cur.execute("select count(*), coalesce(sum(k::bigint * 31 + a), 0), md5(coalesce(string_agg(b, ',' order by k), '')) from rh")
    b = cur.fetchone()
    if a != b:
        print('CONTENT DIFFERS', label, a, b)
        sys.exit(1)


diffs = 0
VERBOSE = args.v
for i in range(rounds):
    txn = rnd.random() < 0.7
    if txn:
        both('begin')
    sp = False
    for j in range(rnd.randrange(1, 8)):
        if txn and not sp and rnd.random() < 0.15:
            both('savepoint s')
            sp = True
        s = stmt()
        if VERBOSE:
            print(s)
        a, b = both(s)
        if a != b:
            diffs += 1
            print('DIFF round %d: %s\n  lsm %s\n  heap %s' % (i, s, str(a)[:300], str(b)[:300]))
            sys.exit(1)
        if a[0] == 'err':
            if sp:
                both('rollback to s')
                sp = False
                continue
            if txn:
                break
        if sp and rnd.random() < 0.3:
            both('rollback to s' if rnd.random() < 0.5 else 'release s')
            sp = False
    if txn:
        both('commit' if rnd.random() < 0.7 else 'rollback')
    check('after round %d' % i)
print('ok', rounds, 'rounds, diffs', diffs)
