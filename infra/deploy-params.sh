#!/usr/bin/env bash
# deploy-params.sh ENV [samconfig.toml]: `make deploy` runs this first. It lists the template's parameters
# that have no default (the account's VPC, secrets and store endpoints) and fails, naming them and the fix,
# when samconfig.toml's [ENV.deploy.parameters] does not set them: without it, sam deploy fails only after
# building everything, with a CloudFormation error that names one parameter at a time.
set -euo pipefail
env=${1:?usage: deploy-params.sh ENV [samconfig.toml]}
cfg=${2:-samconfig.toml}
tmpl="$(cd "$(dirname "$0")/.." && pwd)/template.yaml"
required=$(awk '
  /^Parameters:/ { p = 1; next }
  p && /^[A-Za-z]/ { exit }
  p && /^  [A-Za-z0-9]+:/ { if (n != "" && !d) print n; n = $1; sub(/:$/, "", n); d = 0 }
  p && /^    Default:/ { d = 1 }
  END { if (n != "" && !d) print n }' "$tmpl")
overrides=""
if [ -f "$cfg" ]; then
  overrides=$(awk -v s="[$env.deploy.parameters]" '$0 == s { in_s = 1; next } /^\[/ { in_s = 0 } in_s && /^parameter_overrides/' "$cfg")
fi
missing=()
for p in $required; do
  grep -Eq "(^|[\" ])$p=" <<<"${overrides#*=}" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "samconfig.toml [$env.deploy.parameters] does not set: ${missing[*]}"
  echo "these have no safe default (your VPC, secrets and store endpoints; DEPLOY.md sections 2-5)."
  echo "run once: make deploy-guided ENV=$env   (sam deploy --guided asks for them and saves the answers)"
  exit 1
fi
