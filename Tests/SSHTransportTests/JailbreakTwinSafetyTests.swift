import Foundation
import HADeployCore
import SSHTestPeers
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import SSHTransport

#if canImport(Glibc)
    import Glibc
#endif

/// The jailbroken twins as an attack surface (issue 25 items 1 and 6): a local user without the run's
/// key gets no login; the key's holder gets uid 0 in the twin but nothing of the host; a SIGKILLed
/// hadeploy leaves no twin; device paths from devices.yaml never run as commands on the device.
@Suite("Jailbroken twin safety: key-only logins, contained root, tied to hadeploy's life, quoted paths")
struct JailbreakTwinSafetyTests {
    /// `command` as the unprivileged `nobody` (uid/gid 65534, no groups, a clean environment).
    static func asNobody(_ command: [String], environment: [String: String] = [:]) async throws
        -> TestEnvironment.RunResult
    {
        let variables =
            ["HOME=/nonexistent", "PATH=/usr/bin:/bin", "LC_ALL=C"]
            + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try await TestEnvironment.run(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env", "-i"] + variables + command,
            timeout: 60)
    }

    /// OpenSSH's client as `nobody` logging in as root with `alpine` (the password of a real iPad 2), its
    /// only password prompt answered by an askpass program.
    static func alpineLogin(port: Int, scratch: URL) async throws -> TestEnvironment.RunResult {
        let askpass = scratch.appendingPathComponent("askpass.sh")
        try "#!/bin/sh\necho alpine\n".write(to: askpass, atomically: true, encoding: .utf8)
        chmod(askpass.path, 0o755)
        return try await asNobody(
            [
                "/usr/bin/ssh", "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o",
                "UserKnownHostsFile=/dev/null", "-o", "GlobalKnownHostsFile=/dev/null", "-o",
                "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=1", "-o", "ConnectTimeout=10",
                "-p", String(port), "root@127.0.0.1", "id -u",
            ], environment: ["SSH_ASKPASS": askpass.path, "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": "none"])
    }

    /// Processes whose command line names `path` (the twin's unshare and set-up shell do).
    static func processes(naming path: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard Int32(entry) != nil,
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                data.range(of: Data(path.utf8)) != nil
            else { return nil }
            return "\(entry): " + String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        }
    }

    @Test(
        "during a --virtual run a local user logs in to the twin neither with `alpine` nor with the run's key; SIGKILL of hadeploy ends the twin"
    )
    func virtualRunTwinIsPrivateAndDiesWithHadeploy() async throws {
        try TestEnvironment.requireSetup()
        let root = try TestEnvironment.makeDirectory("hadeploy-jb-safety")
        defer { TestEnvironment.remove(root) }
        try await JailbreakProject.create(at: root)

        // hadeploy as a user runs it, its twin told to hold the deploy at `uicache` (twin.sh's
        // TWIN_HOLD): hadeploy waits there on its own twin, which stays up while the probes run however
        // fast the rest of the deploy is; then hadeploy is SIGKILLed.
        var variables = HADeployBinary.baseEnvironment(home: root)
        variables["TWIN_HOLD"] = "uicache"
        let assignments = variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let hadeploy = try await HADeployBinary.path
        let state = root.appendingPathComponent(".hadeploy/virtual/jailbreak/ipad2")
        let log = root.appendingPathComponent("hadeploy.log").path
        let pid = try TestEnvironment.spawn(
            "/bin/sh",
            ["-c", "cd \"$1\" && shift && exec \"$@\"", "sh", root.path, "/usr/bin/env", "-i"]
                + assignments + [hadeploy, "ipad2", "--virtual", "--no-verify"], outputPath: log)
        var killed = false
        defer {
            if !killed {
                kill(pid, SIGKILL)
                _ = TestEnvironment.wait(pid, timeout: 10)
            }
        }
        let knownHosts = state.appendingPathComponent("known_hosts")
        let held = state.appendingPathComponent("root/var/run/twin/held").path
        let deadline = Date().addingTimeInterval(150)
        while Date() < deadline, !FileManager.default.fileExists(atPath: held), kill(pid, 0) == 0 {
            try await Task.sleep(for: .milliseconds(50))
        }
        let hadeployOutput = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        try #require(
            FileManager.default.fileExists(atPath: held),
            "the deploy never reached the twin's uicache: \(hadeployOutput())")
        try #require(kill(pid, 0) == 0, "hadeploy ended while its twin held uicache: \(hadeployOutput())")
        let port = (try? String(contentsOf: knownHosts, encoding: .utf8))
            .flatMap { $0.split(separator: " ").first }
            .flatMap { field in field.lastIndex(of: ":").flatMap { Int(field[field.index(after: $0)...]) } }
        let twinPort = try #require(port, "no port in \(knownHosts.path): \(hadeployOutput())")
        #expect(TestEnvironment.isListening(port: twinPort))

        // hadeploy's own login (the run's key) works: the probes below reach a live twin.
        let key = state.appendingPathComponent("id_ed25519").path
        let own = try await TestEnvironment.run(
            "/usr/bin/ssh",
            [
                "-F", "/dev/null", "-i", key, "-o", "UserKnownHostsFile=\(knownHosts.path)", "-o",
                "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-p", String(twinPort), "root@127.0.0.1",
                "id -u",
            ])
        #expect(own.status == 0 && own.output.hasSuffix("0\n"), "\(own.output)")

        // A local user: `alpine` is refused (only keys are offered), the run's key cannot be read.
        let alpine = try await Self.alpineLogin(port: twinPort, scratch: root)
        #expect(alpine.status == 255, "\(alpine.output)")
        #expect(alpine.output.contains("Permission denied (publickey)"), "\(alpine.output)")
        let read = try await Self.asNobody(["/usr/bin/cat", key])
        #expect(read.status != 0 && !read.output.contains("PRIVATE KEY"), "\(read.output)")
        let stolen = try await Self.asNobody([
            "/usr/bin/ssh", "-F", "/dev/null", "-i", key, "-o", "StrictHostKeyChecking=no", "-o",
            "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-p", String(twinPort), "root@127.0.0.1",
            "id -u",
        ])
        #expect(stolen.status == 255, "\(stolen.output)")
        var mode = stat()
        #expect(stat(state.path, &mode) == 0 && mode.st_mode & 0o077 == 0, "the key's folder is private")

        // SIGKILL of hadeploy (no chance to clean up): the twin goes within a few seconds.
        kill(pid, SIGKILL)
        _ = TestEnvironment.wait(pid, timeout: 10)
        killed = true
        let twinRoot = state.appendingPathComponent("root").path
        let gone = Date().addingTimeInterval(5)
        while Date() < gone,
            TestEnvironment.isListening(port: twinPort) || !Self.processes(naming: twinRoot).isEmpty
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(
            !TestEnvironment.isListening(port: twinPort), "the twin still listens after hadeploy's SIGKILL")
        #expect(Self.processes(naming: twinRoot).isEmpty, "\(Self.processes(naming: twinRoot))")
    }

    @Test(
        "logged in with the key, as hadeploy is: uid 0 (501 in a twin run without root), but no host file, mount, chroot escape, block device or /proc/sys write; no password login",
        arguments: [JailbreakTwin.Server.openssh, .dropbear], [false, true])
    func keyHolderIsContained(_ server: JailbreakTwin.Server, unprivileged: Bool) async throws {
        let twin = try await JailbreakTwin.start(server, unprivileged: unprivileged)
        defer { twin.stopAndClean() }
        let marker = "hadeploy-marker-\(UUID().uuidString)"
        let content = "host secret \(UUID().uuidString)"
        for folder in ["/root", "/tmp"] {
            try content.write(toFile: "\(folder)/\(marker)", atomically: true, encoding: .utf8)
        }
        defer { for folder in ["/root", "/tmp"] { unlink("\(folder)/\(marker)") } }

        let probe = """
            echo "uid $(id -u)"
            grep CapBnd /proc/self/status
            for f in /root/\(marker) /tmp/\(marker) /host/../root/\(marker) /host/../../tmp/\(marker); do
              cat "$f" 2>/dev/null
            done
            find / -name \(marker) 2>/dev/null | sed 's/^/FOUND /'
            echo "block devices: $(find /dev -type b 2>/dev/null | wc -l)"
            mkdir -p /tmp/mount-probe
            for m in /bin/mount /usr/bin/mount /host/usr/bin/mount; do
              [ -x "$m" ] && "$m" -t tmpfs probe /tmp/mount-probe 2>/dev/null && echo MOUNTED && umount /tmp/mount-probe
            done
            v=$(cat /proc/sys/kernel/domainname)
            (echo "$v" > /proc/sys/kernel/domainname) 2>/dev/null && echo SYSCTL-WRITTEN
            /usr/libexec/twin/python3 - \(marker) <<'PY'
            import os, stat, sys
            marker = sys.argv[1]
            try:
                os.mknod("/tmp/disk-probe", 0o600 | stat.S_IFBLK, os.stat("/").st_dev)
                print("MKNOD")
                os.remove("/tmp/disk-probe")
            except OSError:
                pass
            try:
                os.makedirs("/tmp/escape-probe", exist_ok=True)
                os.chroot("/tmp/escape-probe")
                for _ in range(64):
                    os.chdir("..")
                os.chroot(".")
            except OSError as error:
                print("chroot:", error)
            for path in ("/root/" + marker, "/tmp/" + marker):
                try:
                    print("ESCAPED", open(path).read())
                except OSError:
                    pass
            PY
            echo end
            """
        let connection = try await SSHConnection.connect(try await twin.connection())
        let output = try await connection.run(probe, timeout: 120)
        await connection.close()
        let text = output.stdoutText
        #expect(text.hasPrefix("uid \(twin.sessionRootID)\n"), "\(text)")
        #expect(text.hasSuffix("end\n"), "\(text)")
        #expect(!text.contains(content) && !text.contains("FOUND") && !text.contains("ESCAPED"), "\(text)")
        #expect(text.contains("block devices: 0\n"), "\(text)")
        #expect(
            !text.contains("MOUNTED") && !text.contains("SYSCTL-WRITTEN") && !text.contains("MKNOD"),
            "\(text)")
        // No CAP_SYS_ADMIN (21), CAP_SYS_MODULE (16), CAP_SYS_RAWIO (17), CAP_SYS_PTRACE (19), CAP_MKNOD (27),
        // CAP_DAC_READ_SEARCH (2), CAP_NET_ADMIN (12), CAP_NET_RAW (13) in the bounding set.
        let bounding = text.split(separator: "\n").first { $0.hasPrefix("CapBnd:") }
            .flatMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) }
        let forbidden: UInt64 = [21, 16, 17, 19, 27, 2, 12, 13].reduce(0) { $0 | (1 << $1) }
        #expect(bounding.map { $0 & forbidden == 0 } == true, "\(text)")

        // And a local user's `alpine`: refused, only keys are offered.
        let scratch = try TestEnvironment.makeDirectory("hadeploy-askpass")
        defer { TestEnvironment.remove(scratch) }
        let alpine = try await Self.alpineLogin(port: twin.port, scratch: scratch)
        #expect(
            alpine.status == 255 && alpine.output.contains("Permission denied (publickey)"),
            "\(alpine.output)")
    }

    /// What the twin's own root session leaves in its kept root (links to host paths where twin.sh
    /// writes, removes or reads at the next start) is never followed from the host side: the host's
    /// file keeps its content, the host's folder its files, and the twin starts and works again.
    @Test(
        "links the twin's sessions leave in its kept root are never followed at its next start",
        arguments: [false, true])
    func linksLeftInTheKeptRootAreNotFollowed(unprivileged: Bool) async throws {
        let twin = try await JailbreakTwin.start(unprivileged: unprivileged)
        defer { twin.stopAndClean() }
        // The host's side: a file and a folder twin.sh's user could write (nobody's, for the twin
        // run as nobody), in a folder of this test.
        let host = try TestEnvironment.makeDirectory("hadeploy-twin-host")
        defer { TestEnvironment.remove(host) }
        chmod(host.path, 0o755)
        let file = host.appendingPathComponent("file")
        let folder = host.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try "the host's own".write(to: file, atomically: false, encoding: .utf8)
        try "kept".write(to: folder.appendingPathComponent("kept"), atomically: false, encoding: .utf8)
        if unprivileged {
            _ = try await TestEnvironment.run("/bin/chown", ["-R", "65534:65534", host.path])
        }
        let plant = """
            set -e
            ln -sfn \(file.path) /usr/bin/sysctl
            rm -f /etc/passwd /etc/group /etc/ssh/sshd_config && ln -s \(file.path) /etc/passwd
            ln -s \(folder.path)/group /etc/group && ln -s \(folder.path)/sshd_config /etc/ssh/sshd_config
            rm -rf /var/run/twin && ln -s \(folder.path) /var/run/twin
            rm -rf /usr/libexec/twin.old && mv /usr/libexec/twin /usr/libexec/twin.old
            ln -s \(folder.path) /usr/libexec/twin
            rm -f /etc/ssh/ssh_host_rsa_key.pub && ln -s \(file.path) /etc/ssh/ssh_host_rsa_key.pub
            echo planted
            """
        let connection = try await SSHConnection.connect(try await twin.connection())
        let planted = try await connection.run(plant, timeout: 60)
        await connection.close()
        #expect(planted.stdoutText == "planted\n", "\(planted.stdoutText)\(planted.stderrText)")

        var restartFailure: (any Error)?
        do { try await twin.restart() } catch { restartFailure = error }
        #expect(try String(contentsOf: file, encoding: .utf8) == "the host's own")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names == ["kept"], "twin.sh wrote into or emptied a host folder: \(names)")
        if let restartFailure {
            Issue.record("the twin did not start again: \(restartFailure)")
            return
        }
        // The twin came back whole: a session works and its tools are its own again.
        let again = try await SSHConnection.connect(try await twin.connection())
        let check = try await again.run(
            "sysctl -n kern.boottime >/dev/null && head -n 1 /etc/passwd", timeout: 60)
        await again.close()
        #expect(check.stdoutText.hasPrefix("root:x:"), "\(check.stdoutText)\(check.stderrText)")
    }

    @Test(
        "an install_dir holding $(…) and backquotes runs nothing on the device; one with spaces and quotes works"
    )
    func installDirectoryIsNeverACommand() async throws {
        let twin = try await JailbreakTwin.start()
        defer { twin.stopAndClean() }
        let app = try TestApp()
        defer { app.remove() }
        let missing =
            "/Applications/missing $(touch /tmp/pwned-dollar) `touch /tmp/pwned-backquote` ';touch /tmp/pwned-quote;'"
        var config = try await twin.deployConfig()
        config.installDirectory = missing
        let error = await #expect(throws: SSHError.self) {
            try await JailbreakDeployer(live: config).install(app: app.url)
        }
        // What the device said (not the command line, which names the directory too).
        guard case .remoteCommandFailed(_, _, _, _, let said) = error else {
            Issue.record("not a failed command: \(String(describing: error))")
            return
        }
        #expect(said.contains("install directory \(missing) does not exist"), "\(said)")
        for name in ["pwned-dollar", "pwned-backquote", "pwned-quote"] {
            #expect(!FileManager.default.fileExists(atPath: twin.url("/tmp/\(name)").path), "\(name) ran")
        }

        let odd = "/var/mobile/It's a \"quoted\" $HOME dir"
        try FileManager.default.createDirectory(at: twin.url(odd), withIntermediateDirectories: true)
        config.installDirectory = odd
        let report = try await JailbreakDeployer(live: config).install(app: app.url)
        #expect(report.changed)
        #expect(FileManager.default.fileExists(atPath: twin.url(odd + "/HADash.app/Info.plist").path))
    }

    @Test("the backup's error message names a hostile install directory without running it")
    func backupFailureMessageIsQuoted() async throws {
        let scratch = try TestEnvironment.makeDirectory("hadeploy-backup-quote")
        defer { TestEnvironment.remove(scratch) }
        // A `'` closes a single-quoted message: what follows it would run, unquoted, on the device.
        let install = scratch.path + "/it'$(touch \(scratch.path)/pwned)'s dir"
        try FileManager.default.createDirectory(
            atPath: install + "/HADash.app", withIntermediateDirectories: true)
        // The archive cannot be written (a directory is in its place): tar fails, the message runs.
        let backup = scratch.path + "/backups/1"
        try FileManager.default.createDirectory(
            atPath: backup + "/HADash.app-before.tar.gz", withIntermediateDirectories: true)
        let script = JailbreakScripts.backup(
            directory: backup, parent: scratch.path + "/backups", installDirectory: install,
            appDirectory: "HADash.app", archive: "HADash.app-before.tar.gz",
            preferences: scratch.path + "/none.plist", keep: 5)
        let result = try await TestEnvironment.run("/bin/sh", ["-c", script])
        #expect(result.status == 1)
        #expect(result.output.contains("cannot archive \(install)/HADash.app"), "\(result.output)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/pwned"))
    }
}
