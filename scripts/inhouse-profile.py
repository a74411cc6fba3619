#!/usr/bin/env python3
"""inhouse-profile.py OUT — writes an in-house provisioning profile (ProvisionsAllDevices, every app id
of the team HADEPLOYBN, a year long) to OUT, signed in a CMS envelope by a throwaway certificate with the
openssl CLI. The twins refuse an app whose profile does not cover them, as real devices do; the
benchmarks' synthetic apps carry this one (the twins, like hadeploy, read the profile, not Apple's
signature)."""
import datetime
import os
import plistlib
import subprocess
import sys
import tempfile

out = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0, tzinfo=None)
profile = {
    "Name": "hadeploy benchmarks (in-house)", "UUID": "BE7C0000-0000-4000-8000-00000000A11D",
    "TeamIdentifier": ["HADEPLOYBN"], "ApplicationIdentifierPrefix": ["HADEPLOYBN"], "Platform": ["iOS"],
    "CreationDate": now, "ExpirationDate": now + datetime.timedelta(days=365), "Version": 1,
    "ProvisionsAllDevices": True,
    "Entitlements": {"application-identifier": "HADEPLOYBN.*", "com.apple.developer.team-identifier": "HADEPLOYBN"},
}
with tempfile.TemporaryDirectory() as work:
    plist, key, cert = (os.path.join(work, n) for n in ("profile.plist", "key.pem", "cert.pem"))
    with open(plist, "wb") as f:
        plistlib.dump(profile, f)
    for args in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "366",
                  "-subj", "/CN=iPhone Distribution: hadeploy benchmarks"],
                 ["cms", "-sign", "-nodetach", "-binary", "-outform", "DER", "-in", plist, "-signer", cert,
                  "-inkey", key, "-out", out]):
        subprocess.run(["openssl"] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
