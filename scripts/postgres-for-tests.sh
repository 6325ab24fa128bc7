#!/usr/bin/env bash
# Sourced by scripts/test.sh: starts a throwaway PostgreSQL server (Debian's `postgresql`,
# which scripts/install-deps.sh installs) on a free loopback port, in a temporary folder this
# shell owns, and exports GLEANER_TEST_DATABASE_URL for the PostgreSQL half of the tests; the
# server is stopped and its folder removed when the shell exits. Each test makes a schema of
# its own in it, so tests run in parallel.
#
# A server of your own instead: export GLEANER_TEST_DATABASE_URL=postgres://user@host/db (a
# database the user may create schemas in) before scripts/test.sh or cargo test.

if [[ -n "${GLEANER_TEST_DATABASE_URL:-}" ]]; then
  echo "postgres-for-tests: using GLEANER_TEST_DATABASE_URL from the environment"
  return 0 2>/dev/null || exit 0
fi

pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [[ -z "$pg_bin" || ! -x "$pg_bin/initdb" ]]; then
  echo "postgres-for-tests: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin; run scripts/install-deps.sh (apt package postgresql)" >&2
  return 1 2>/dev/null || exit 1
fi

pg_dir="$(mktemp -d /tmp/gleaner-test-pg.XXXXXX)"
pg_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# initdb and the server refuse to run as root: as root they run as the `postgres` user that
# Debian's package creates.
if ((EUID == 0)); then
  chown postgres "$pg_dir"
  as_pg=(runuser -u postgres --)
  pg_user=postgres
else
  as_pg=()
  pg_user="$(id -un)"
fi
# Connections over TCP need the password, as a real server's do (the tests of wrong
# credentials meet a real refusal); the server's own socket in its folder is trusted.
pg_password="gleaner-test"
printf '%s\n' "$pg_password" >"$pg_dir/pwfile"
chmod 644 "$pg_dir/pwfile"
"${as_pg[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U "$pg_user" --auth-local=trust --auth-host=scram-sha-256 \
  --pwfile="$pg_dir/pwfile" -E UTF8 --locale=C.UTF-8 >"$pg_dir/initdb.log" 2>&1 || {
  cat "$pg_dir/initdb.log" >&2
  echo "postgres-for-tests: initdb failed" >&2
  return 1 2>/dev/null || exit 1
}
# TLS as a lab's server would have it: a certificate for localhost and 127.0.0.1 from a test
# authority (root.crt, for sslrootcert), and a second authority that signed nothing here.
(
  cd "$pg_dir" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3 \
      -subj "/CN=Gleaner test authority" -keyout ca.key -out root.crt \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3 \
      -subj "/CN=Another authority" -keyout other.key -out other-root.crt \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
      -keyout server.key -out server.csr &&
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
      "keyUsage=digitalSignature" "extendedKeyUsage=serverAuth" >server.ext &&
    openssl x509 -req -in server.csr -CA root.crt -CAkey ca.key -CAcreateserial -days 3 \
      -extfile server.ext -out server.crt &&
    chmod 600 server.key && chown "$pg_user" server.key server.crt
) >"$pg_dir/openssl.log" 2>&1 || {
  cat "$pg_dir/openssl.log" >&2
  echo "postgres-for-tests: openssl could not make the test certificates" >&2
  return 1 2>/dev/null || exit 1
}
# Durability is not what these tests are about: no fsync keeps them fast on a shared disk.
"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $pg_dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400 -c ssl=on -c ssl_cert_file=$pg_dir/server.crt -c ssl_key_file=$pg_dir/server.key" \
  start >/dev/null || {
  cat "$pg_dir/server.log" >&2
  echo "postgres-for-tests: the server did not start" >&2
  return 1 2>/dev/null || exit 1
}
export GLEANER_TEST_DATABASE_URL="postgres://$pg_user:$pg_password@127.0.0.1:$pg_port/postgres"
export GLEANER_TEST_PG_DIR="$pg_dir"
export GLEANER_TEST_PG_ROOTCERT="$pg_dir/root.crt"
stop_test_postgres() {
  "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}
trap stop_test_postgres EXIT
echo "postgres-for-tests: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port"
