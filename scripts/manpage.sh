#!/bin/bash
# Writes hadeploy(1) in roff to stdout, from the binary's own --help texts (the main command and
# each subcommand), so the page never disagrees with the command line it documents.
set -euo pipefail
bin="$1"
version="$("$bin" --version)"
escape() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
cat <<ROFF
.TH HADEPLOY 1 "" "hadeploy $version" "User Commands"
.SH NAME
hadeploy \\- build, version and deploy the HA Dashboard iOS app to a device matrix
.SH SYNOPSIS
.B hadeploy
[\\fIsubcommand\\fR] [\\fItarget\\fR ...] [\\fIoptions\\fR]
.SH DESCRIPTION
.nf
ROFF
"$bin" --help | escape
echo ".fi"
# Subcommands as listed under SUBCOMMANDS: in the main help.
for sub in $("$bin" --help | awk '/^SUBCOMMANDS:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{if (seen) exit} on{seen=1}'); do
  echo ".SH \"hadeploy $sub\""
  echo ".nf"
  "$bin" "$sub" --help | escape
  echo ".fi"
done
cat <<'ROFF'
.SH FILES
.TP
.I devices.yaml
the device matrix (write one with \fBhadeploy init\fR)
.TP
.I .env
keys and secrets (copy \fI.env.example\fR); the environment overrides it
.SH EXIT STATUS
0 every device succeeded; 1 some device failed; 2 build failed; 64 usage error;
78 configuration error.
ROFF
