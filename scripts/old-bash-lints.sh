#!/usr/bin/env bash
# The lint scripts under an older bash than this machine's: macOS's /bin/bash is 3.2, and
# `#!/usr/bin/env bash` finds it on a Mac without Homebrew's bash. Usage: scripts/old-bash-lints.sh BASH
# (a bash 3.2 built from GNU's sources, for example). Every script in scripts/ and .ci/run must parse
# under it, and the three lints `make test-mac` and `make check` run must say the same under it as
# under this machine's bash: once on the tree as it is, once on a copy with one offending line of
# each kind added (a lint that passes everything under an old bash is the failure this looks for).
set -uo pipefail
old=${1:?usage: scripts/old-bash-lints.sh /path/to/an/older/bash}
[ -x "$old" ] || { echo "old-bash-lints: $old is not an executable" >&2; exit 2; }
cd "$(dirname "$0")/.."
echo "old-bash-lints: $("$old" -c 'echo "$BASH_VERSION"') against $BASH_VERSION"
failed=0
for script in scripts/*.sh .ci/run; do
  out=$("$old" -n "$script" 2>&1) || { echo "$script does not parse: $out"; failed=1; }
done
seeded=$(mktemp -d "${TMPDIR:-/tmp}/old-bash-lints.XXXXXX")
trap 'rm -rf "$seeded"' EXIT
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$seeded"
victim=$seeded/Sources/HADeployKit/Plan/DeployPlanner.swift
{ echo 'import ZIPFoundation'; cat "$victim"; printf '%s\n' 'let lintProbe = Date()' \
  'let lintProbe2 = Glibc.getpid()' 'let lintProbe3 = "/proc/self/fd"'; } > "$victim.new"
mv "$victim.new" "$victim"
for tree in . "$seeded"; do
  for lint in side-effects-lint platform-lint check-imports; do
    new_out=$(cd "$tree" && bash "scripts/$lint.sh" 2>&1); new_rc=$?
    old_out=$(cd "$tree" && "$old" "scripts/$lint.sh" 2>&1); old_rc=$?
    if [ "$tree" = "$seeded" ] && [ "$new_rc" = 0 ]; then
      echo "$lint passed the seeded offence under this bash"; failed=1
    fi
    if [ "$new_rc" != "$old_rc" ] || [ "$new_out" != "$old_out" ]; then
      echo "$lint ($tree) differs: exit $new_rc/$old_rc"
      diff <(echo "$new_out") <(echo "$old_out") | head -20
      failed=1
    fi
  done
done
[ "$failed" = 0 ] && echo "old-bash-lints: every script parses, the lints say the same under both"
exit "$failed"
