#!/usr/bin/env bash
# Prepares the GPU check, here (where optgen builds): writes gpu-bundle/, a
# git-ignored folder under 64 MB with everything scripts/gpu-check.sh needs
# on a machine with an NVIDIA GPU, where neither MLIR nor optgen runs:
#
#   gen/NAME/      optgen's CUDA for every example the CUDA printer prints
#                  (a header, a .cu, a runner, a CMakeLists.txt); the others
#                  are listed in manifest.txt with the printer's reason
#   cases/         per printed example a random case (every shape class its
#                  rules accept), and the fp64 interpreter's and the CPU
#                  target's results on it
#   googletest/    GoogleTest's sources, for the runtime's GPU tests
#   manifest.txt   one line per example: NAME TOLERANCE (or NAME skipped WHY)
#   commit.txt     the commit it was made at (-dirty with changes), which the
#                  check reports (the GPU machine's copy may have no .git)
#
# Then run the check there with the bundle carried:
#   scripts/gpu-check.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bundle="$root/gpu-bundle"

scripts/install-deps.sh
scripts/build.sh >/dev/null
optgen="$root/build/bin/optgen"

rm -rf "$bundle"
mkdir -p "$bundle/gen" "$bundle/cases"
cp -r /usr/src/googletest "$bundle/googletest"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]] && commit+=-dirty
echo "$commit" >"$bundle/commit.txt"

# The examples, each with the parameters of its case and the tolerance of
# its update against the fp64 interpreter (as test/numeric/CMakeLists.txt).
any_rank="one=1 vector=37 tall=48x12 wide=12x48 square=16x16 cube=3x4x5 big=257x389"
matrices="tall=48x12 wide=12x48 square=16x16 one=1x1 column=9x1 row=1x9"
nanochat="transformer.wte.weight=64x16 lm_head.weight=64x16 resid_lambdas=3
  transformer.h.0.attn.c_q.weight=16x16 transformer.h.0.mlp.c_fc.weight=64x16
  transformer.h.0.mlp.c_proj.weight=16x64 transformer.h.1.mlp.c_fc.weight=64x16
  transformer.h.1.one.weight=1x1"
examples=(
  "adamw|adamw.opt|1e-4||$any_rank bias=40 norm_w=40"
  "lion|lion.opt|1e-2||$any_rank"
  "sgd_nesterov|sgd_nesterov.opt|1e-4||$any_rank"
  "lookahead|lookahead.opt|1e-4||$any_rank"
  "clip_adamw|clip_adamw.opt|1e-4||$any_rank bias=40 norm_w=40"
  "adafactor|adafactor.opt|1e-4||$matrices"
  "muon_newton_schulz_f32|muon_newton_schulz.opt|1e-4|compute=f32|$matrices"
  "muon_newton_schulz_bf16|muon_newton_schulz.opt|0.25||$matrices"
  "nanochat_f32|nanochat.opt|1e-4|compute=f32|$nanochat"
  "nanochat_bf16|nanochat.opt|0.25||$nanochat"
  "nanochat_6ed7d1d_f32|nanochat_6ed7d1d.opt|1e-4|compute=f32|$nanochat"
  "nanochat_6ed7d1d_bf16|nanochat_6ed7d1d.opt|0.25||$nanochat"
)
: >"$bundle/manifest.txt"
for entry in "${examples[@]}"; do
  IFS='|' read -r name spec tolerance define params <<<"$entry"
  defines=()
  [[ -n $define ]] && defines=(-D "$define")
  if ! "$optgen" compile "examples/$spec" "${defines[@]}" --target=cuda \
      -o "$bundle/gen/$name" 2>"$bundle/gen/$name.err"; then
    why=$(grep -m1 'error:' "$bundle/gen/$name.err" | sed 's/.*error: //')
    echo "$name skipped not printable yet: $why" >>"$bundle/manifest.txt"
    rm -rf "$bundle/gen/$name" "$bundle/gen/$name.err"
    echo "gpu-prepare: $name: not printable yet ($why)"
    continue
  fi
  rm -f "$bundle/gen/$name.err"
  # shellcheck disable=SC2086 # the parameters are words
  python3 test/numeric/make_case.py "$bundle/cases/$name.safetensors" $params \
    --steps 3 --seed 7
  "$optgen" run "examples/$spec" "${defines[@]}" --interpret \
    --case "$bundle/cases/$name.safetensors" \
    --out "$bundle/cases/$name.reference.safetensors" >/dev/null
  # The CPU target's result: the numeric tests' runner of the same spec and
  # defines, which scripts/build.sh built.
  "$root/build/bin/numeric_${name}_runner" \
    --case "$bundle/cases/$name.safetensors" \
    --out "$bundle/cases/$name.cpu.safetensors" >/dev/null
  echo "$name $tolerance" >>"$bundle/manifest.txt"
  echo "gpu-prepare: $name: CUDA and a case with its references"
done

size=$(du -sm "$bundle" | cut -f1)
echo "gpu-prepare: gpu-bundle/ holds ${size} MB"
if ((size >= 64)); then
  echo "gpu-prepare: error: the bundle must stay under 64 MB" >&2
  exit 1
fi
