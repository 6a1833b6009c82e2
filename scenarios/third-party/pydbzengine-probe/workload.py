# usage: workload.py SEED FIRST_ID N_STEPS [alter|addcol|both] > script.sql ; run with psql (autocommit per stmt)
import random, sys, string
seed, first, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else ""
rnd = random.Random(seed)
live = {}   # id -> number of lines
nid = first
out = ["\\set ON_ERROR_STOP 1"]
def big():
    return "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(6000))
for step in range(n):
    if step == n // 2 and mode in ("alter", "both"):
        out.append("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(12,2);")
    if step == n // 2 + n // 10 and mode in ("addcol", "both"):
        out.append("ALTER TABLE orders ADD COLUMN channel text DEFAULT 'web';")
    r = rnd.random()
    if r < 0.35 or len(live) < 5:
        lines = rnd.randint(1, 3); live[nid] = lines
        note = big() if rnd.random() < 0.1 else f"n{nid}"
        amt = f"{rnd.randint(1, 9999999)/100:.2f}" if step < n // 2 else f"{rnd.randint(1, 999999999)/100:.2f}"
        out.append(f"BEGIN; INSERT INTO orders VALUES ({nid}, {rnd.randint(1,50)}, 'new', {amt}, '{note}', now());")
        for l in range(1, lines + 1):
            out.append(f"INSERT INTO order_items VALUES ({nid}, {l}, 'SKU{rnd.randint(1,999)}', {rnd.randint(1,9)});")
        out.append("COMMIT;")
        nid += 1
    elif r < 0.60:
        i = rnd.choice(list(live))
        out.append(f"UPDATE orders SET status='{rnd.choice(['paid','shipped','held'])}', updated_at=now() WHERE id={i};")  # TOASTed note unchanged
    elif r < 0.70:
        i = rnd.choice(list(live))
        out.append(f"BEGIN; UPDATE orders SET amount=amount+1, status='t1' WHERE id={i}; UPDATE orders SET amount=amount+2, status='t2' WHERE id={i}; COMMIT;")
    elif r < 0.80:
        i = rnd.choice(list(live))
        if live[i]:
            out.append(f"UPDATE order_items SET qty=qty+1 WHERE order_id={i} AND line=1;")
    elif r < 0.88:
        i = rnd.choice(list(live))
        if live[i] > 1:
            out.append(f"DELETE FROM order_items WHERE order_id={i} AND line={live[i]};"); live[i] -= 1
    else:
        i = rnd.choice(list(live)); del live[i]
        out.append(f"BEGIN; DELETE FROM order_items WHERE order_id={i}; DELETE FROM orders WHERE id={i}; COMMIT;")
    out.append("SELECT pg_sleep(0.1) \\g /dev/null")
print("\n".join(out))
