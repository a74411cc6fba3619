import SSHTransport

/// The shell scripts run on a jailbroken device, written for the tools an iOS 9/10 jailbreak has.
///
/// Cydia's bootstrap has `sh`, `tar`, `gzip`, `find`, `cp`, `mv`; OpenSSH pulls in `openssl`; GNU
/// `sha256sum` only comes with a newer coreutils and perl's `shasum` with perl. So a SHA-256 is taken with
/// whichever of `sha256sum`, `openssl dgst -sha256`, `shasum -a 256` exists (the old deploy script tried
/// `shasum` then `openssl`); `RemoteManifest` reads all three output formats.
enum JailbreakScripts {
    static let q = ShellQuote.quote

    /// Sets `H` to the first SHA-256 command found (word-split when used) and defines `hs FILE...`.
    static let hashFunction = """
        if command -v sha256sum >/dev/null 2>&1; then H=sha256sum
        elif command -v openssl >/dev/null 2>&1; then H='openssl dgst -sha256'
        elif command -v shasum >/dev/null 2>&1; then H='shasum -a 256'
        else H=''; fi
        hs() {
          [ -n "$H" ] || { echo 'no SHA-256 tool on the device (sha256sum, openssl or shasum)' >&2; return 3; }
          $H "$@"
        }
        """

    /// At the start of a deploy or rollback: drops what earlier runs left in the install directory (the
    /// folder of `staging`): every `.hadeploy-staging-<Name>.app` — this app's (`target`) and any other's
    /// (a renamed app, another flavour) — after putting back an app whose swap was cut between its two
    /// renames (parked there as `.previous`, `<Name>.app` missing). A link there is removed, never
    /// followed. Runs on one device never overlap (hadeploy holds the device's lock for the run), so
    /// each of them is an earlier, stopped run's.
    static func recover(target: String, staging: String) -> String {
        let root = q(String(staging[..<(staging.lastIndex(of: "/") ?? staging.startIndex)]))
        return """
            for staging in \(root)/.hadeploy-staging-*; do
              if [ -L "$staging" ]; then rm -f "$staging" || exit 1; continue; fi
              [ -d "$staging" ] || continue
              app=\(root)/"${staging##*/.hadeploy-staging-}"
              if [ ! -e "$app" ] && [ ! -L "$app" ] && [ -d "$staging/.previous" ] && [ ! -L "$staging/.previous" ]; then
                mv "$staging/.previous" "$app" || exit 1
              fi
              rm -rf "$staging" || { echo "cannot remove $staging, left by an earlier deploy" >&2; exit 1; }
            done
            """
    }

    /// After a failed install: this run's staging copy goes (an app a cut swap parked in it put back
    /// first), deaf to the hang-up of a dropping connection; tried twice, as a cut transfer's last write
    /// can land while the first removal runs.
    static func discard(target: String, staging: String) -> String {
        """
        trap '' HUP INT TERM PIPE
        if [ ! -e \(q(target)) ] && [ -d \(q(staging + "/.previous")) ]; then
          mv \(q(staging + "/.previous")) \(q(target)) || exit 1
        fi
        rm -rf \(q(staging)) 2>/dev/null || { sleep 1; rm -rf \(q(staging)); }
        """
    }

    /// `D ./dir` for every directory and a SHA-256 line for every file of the installed app; nothing if
    /// there is none.
    static func listing(target: String) -> String {
        """
        \(hashFunction)
        cd \(q(target)) 2>/dev/null || exit 0
        find . -type d | sed 's/^/D /'
        [ -n "$H" ] || { echo 'no SHA-256 tool on the device (sha256sum, openssl or shasum)' >&2; exit 3; }
        find . -type f -exec $H {} +
        """
    }

    /// Archives the installed app and copies the preferences with their SHA-256 into `directory`, then
    /// keeps only the newest `keep` backups; on failure removes the partial backup and exits non-zero.
    static func backup(
        directory: String, parent: String, installDirectory: String, appDirectory: String, archive: String,
        preferences: String, keep: Int
    ) -> String {
        """
        \(hashFunction)
        fail() { rm -rf \(q(directory)); echo "$1" >&2; exit 1; }
        mkdir -p \(q(directory)) || fail \(q("cannot create \(directory)"))
        if [ -d \(q(installDirectory + "/" + appDirectory)) ]; then
          tar czf \(q(directory + "/" + archive)) -C \(q(installDirectory)) \(q(appDirectory)) \
            || fail \(q("cannot archive \(installDirectory)/\(appDirectory)"))
        fi
        if [ -f \(q(preferences)) ]; then
          cp -p \(q(preferences)) \(q(directory + "/preferences-before.plist")) || fail 'cannot copy the preferences'
          hs \(q(directory + "/preferences-before.plist")) > \(q(directory + "/preferences-before.sha256")) \
            || fail 'cannot checksum the preferences'
        fi
        echo complete > \(q(directory + "/complete")) || fail 'cannot finish the backup'
        ls -1 \(q(parent)) | sort -r | tail -n +\(keep + 1) | while IFS= read -r old; do
          rm -rf \(q(parent))/"$old"
        done
        exit 0
        """
    }

    /// Builds `staged` from the installed app plus the uploaded `delta`, without the files that are gone
    /// (their paths arrive on stdin, one per line).
    static func assemble(target: String, staged: String, delta: String) -> String {
        """
        cp -Rp \(q(target)) \(q(staged)) || exit 1
        while IFS= read -r gone; do rm -rf \(q(staged))/"$gone" || exit 1; done
        cp -Rp \(q(delta))/. \(q(staged))/ && rm -rf \(q(delta))
        """
    }

    /// Two renames inside one directory, deaf to the hang-up a dropped connection sends: the installed
    /// app is the old one or the new one; a cut between the renames is repaired by `recover`.
    static func swap(target: String, staged: String, staging: String, sidecar: String, record: String)
        -> String
    {
        let previous = staging + "/.previous"
        return """
            trap '' HUP INT TERM PIPE
            if [ -e \(q(target)) ]; then mv \(q(target)) \(q(previous)) || exit 1; fi
            if ! mv \(q(staged)) \(q(target)); then
              [ -e \(q(previous)) ] && mv \(q(previous)) \(q(target)); exit 1
            fi
            printf '%s\\n' \(q(record)) > \(q(sidecar))
            rm -rf \(q(staging))
            exit 0
            """
    }

    /// Only this app's caches: its Caches directory and its temporary files.
    static func clearCaches(mobile: String, bundleID: String) -> String {
        "rm -rf \(q(mobile + "/Library/Caches/" + bundleID)) \(q(mobile + "/tmp/" + bundleID))* 2>/dev/null; exit 0"
    }

    /// Writes stdin as the preferences plist: private until complete, then renamed over the old one.
    static func installPreferences(path: String, owner: String) -> String {
        let temporary = path + ".hadeploy-new"
        return """
            umask 077
            mkdir -p \(q(String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]))) || exit 1
            cat > \(q(temporary)) || { rm -f \(q(temporary)); exit 1; }
            chown \(q(owner)) \(q(temporary)) && chmod 600 \(q(temporary)) && mv \(q(temporary)) \(q(path)) \
              || { rm -f \(q(temporary)); exit 1; }
            """
    }
}
