# compare latest-per-key derived from the V1 change-log lake with the source tables
import json, os, sys, subprocess, collections, datetime
from decimal import Decimal
from pyiceberg.catalog import load_catalog
cat = load_catalog(os.environ["LOSSPROOF_CATALOG_NAME"], **json.loads(os.environ["LOSSPROOF_CATALOG_PROPERTIES"]))
ns, run = os.environ["LOSSPROOF_NAMESPACE"], os.environ["LOSSPROOF_RUN"]
def norm(v):
    if isinstance(v, str):
        try: return ("ts", datetime.datetime.fromisoformat(v.replace("Z", "+00:00")))
        except ValueError: pass
        try: return ("num", Decimal(v))
        except Exception: return v
    if isinstance(v, (int, float)): return ("num", Decimal(str(v)))
    return v
for table, keycols in (("orders", ["id"]), ("order_items", ["order_id", "line"])):
    rows = cat.load_table((ns, f"{run}_public_{table}")).scan().to_arrow().to_pylist()
    seen = collections.Counter(); latest = {}; ops = collections.Counter(); toast = 0
    for r in rows:
        src = json.loads(r["source"])
        ident = (r["_dbz_event_key"], r["op"], src["lsn"], src["txId"], r["after"], r["before"])
        seen[ident] += 1; ops[r["op"]] += 1
        if r["after"] and "__debezium_unavailable_value" in r["after"]: toast += 1
        key = json.loads(r["_dbz_event_key"])
        k = tuple(key[c] for c in keycols)
        order = (src["lsn"], json.loads(src["sequence"])[0] or 0, r["ts_us"])
        if k not in latest or order >= latest[k][0]:
            latest[k] = (order, r)
    dups = sum(c - 1 for c in seen.values() if c > 1)
    # fold each key's events in source order (lsn), carrying TOAST-unchanged columns forward
    by_key = collections.defaultdict(list)
    for r in rows:
        src = json.loads(r["source"]); key = json.loads(r["_dbz_event_key"])
        by_key[tuple(key[c] for c in keycols)].append((src["lsn"], r))
    lake = {}
    for k, evs in by_key.items():
        state = None
        for _, r in sorted(evs, key=lambda e: e[0]):
            if r["op"] == "d": state = None; continue
            new = json.loads(r["after"])
            for c, v in new.items():
                if v == "__debezium_unavailable_value" and state is not None: new[c] = state.get(c)
            state = new
        if state is not None: lake[k] = state
    q = f"SET TimeZone='UTC'; SELECT coalesce(json_agg(t),'[]') FROM public.{table} t"
    src_rows = json.loads(subprocess.check_output(["psql", "-qtA", "-h", "127.0.0.1", "-p", "55432", "-U", "postgres", "-d", "shop", "-c", q]).decode())
    db = {tuple(r[c] for c in keycols): r for r in src_rows}
    missing = [k for k in db if k not in lake]; extra = [k for k in lake if k not in db]
    diff = []
    for k in db:
        if k in lake:
            a, b = db[k], lake[k]
            cols = [c for c in a if norm(a.get(c)) != norm(b.get(c))]
            if cols: diff.append((k, {c: (a.get(c) if not isinstance(a.get(c), str) or len(a.get(c)) < 60 else a.get(c)[:20] + '...', (b.get(c) if not isinstance(b.get(c), str) or len(b.get(c)) < 60 else b.get(c)[:40] + '...')) for c in cols}))
    print(f"{table}: lake events={len(rows)} ops={dict(ops)} exact-duplicate events={dups} toast-placeholder events={toast}")
    print(f"  source rows={len(db)} lake-latest live keys={len(lake)} missing_in_lake={len(missing)} extra_in_lake={len(extra)} value_mismatches={len(diff)}")
    for d in (missing[:5], extra[:5], diff[:5]):
        if d: print("   ", d)
