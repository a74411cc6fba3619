import DeployModel
import Foundation
import HADeployCore
import MobileDevice
import SSHTransport

/// Installs, starts, stops and photographs the dashboard app on a jailbroken iOS device over SSH.
///
/// Install = back up the installed app and its preferences on the device (a failed backup stops here),
/// compare SHA-256s on the device with the local files, send only the changed ones into a private staging
/// copy next to the target, `ldid -S` the executable, then replace `/Applications/<Name>.app` by two
/// renames the dropped connection cannot interrupt, `killall`, `uicache` and clear this app's caches. An
/// interrupted deploy leaves the old app or the new one; the next deploy repairs a cut swap.
public struct JailbreakDeployer: Sendable {
    public let config: JailbreakDeployConfig
    /// This host's files: the app sent, its unsigned copy, crash reports fetched.
    public let fileSystem: any FileSystem
    /// Stamps backups and times installs.
    let clock: any WallClock

    public init(config: JailbreakDeployConfig, fileSystem: any FileSystem, clock: any WallClock) {
        self.config = config
        self.fileSystem = fileSystem
        self.clock = clock
    }

    var device: String { config.connection.name }

    // MARK: public verbs (each opens and closes its own connection)

    /// Install (or skip if unchanged), stop the running app, refresh icons, launch with `launch`.
    public func deploy(
        app: URL, launch: ResolvedLaunch?, force: Bool = false,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> InstallReport {
        let info = try AppBundleInfo(app: app)
        try config.commands.validate()
        if let launch { _ = try launchCommand(info: info, parameters: launch, argsFile: "") }
        return try await withConnection { connection in
            let report = try await install(
                app: app, info: info, force: force, on: &connection, progress: progress)
            if let launch {
                _ = try await stop(info: info, on: connection)
                try await start(info: info, parameters: launch, on: connection)
            }
            return report
        }
    }

    /// Uploads and installs `app` (a local `.app` directory) unless the device has the same content.
    public func install(
        app: URL, force: Bool = false, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> InstallReport {
        let info = try AppBundleInfo(app: app)
        try config.commands.validate()
        return try await withConnection { connection in
            try await install(app: app, info: info, force: force, on: &connection, progress: progress)
        }
    }

    /// Starts the installed app with `parameters` (secrets on stdin only).
    public func launch(app: URL, settings parameters: ResolvedLaunch) async throws {
        let info = try AppBundleInfo(app: app)
        try await withConnection { connection in
            try await start(info: info, parameters: parameters, on: connection)
        }
    }

    /// Stops the app; returns false if it was not running.
    @discardableResult
    public func stop(app: URL) async throws -> Bool {
        let info = try AppBundleInfo(app: app)
        return try await withConnection { connection in
            try await stop(info: info, on: connection)
        }
    }

    /// Opens a connection for `body` and closes it afterwards, also when `body` throws.
    func withConnection<T: Sendable>(
        _ body: (inout SSHConnection) async throws -> T
    ) async throws -> T {
        var connection = try await SSHConnection.connect(config.connection)
        do {
            let result = try await body(&connection)
            await connection.close()
            return result
        } catch {
            await connection.close()
            throw error
        }
    }

    /// A screenshot as the app takes it on a jailbroken device: it checks `/tmp/take_screenshot` after each
    /// dashboard rebuild, removes it and writes `/tmp/screenshot.png` 3 s later (once per launch; `launch`
    /// lays the trigger before `open` and removes any older image, so an image present is this launch's,
    /// even while a trigger touched here is still waiting). A configured `screenshot` command replaces that.
    public func screenshot(timeout: Double? = nil) async throws -> Data {
        try await withConnection { connection in
            try await screenshot(timeout: timeout ?? config.screenshotTimeout, on: connection)
        }
    }

    private func screenshot(timeout: Double, on connection: SSHConnection) async throws -> Data {
        let template = config.commands.screenshot
        let step = "screenshot"
        let output: SSHCommandOutput
        if template.isEmpty {
            let q = ShellQuote.quote
            let trigger = q(temporary("take_screenshot"))
            let image = q(temporary("screenshot.png"))
            let seconds = max(1, Int(timeout.rounded(.up)))
            let late =
                "the app wrote no \(temporary("screenshot.png")) within \(seconds) s: it takes one after a "
                + "dashboard rebuild, once per launch; relaunch it (deploy again) and check its log"
            output = try await connection.execute(
                """
                if [ ! -s \(image) ] && [ ! -e \(trigger) ]; then touch \(trigger) || exit 1; fi
                i=0
                while [ $i -lt \(seconds) ]; do
                  if [ -s \(image) ]; then sleep 1; cat \(image); rm -f \(image) \(trigger); exit 0; fi
                  sleep 1; i=$((i + 1))
                done
                rm -f \(trigger)
                echo \(q(late)) >&2
                exit 4
                """, timeout: timeout + 30, step: step)
        } else if template.contains("{output}") {
            let path = temporary("hadeploy-screenshot-\(UUID().uuidString).png")
            let command = try JailbreakCommands.expand(template, ["output": path], field: "screenshot")
            let quoted = ShellQuote.quote(path)
            output = try await connection.run(
                "\(command) && cat \(quoted); status=$?; rm -f \(quoted); exit $status", timeout: timeout,
                step: step)
        } else {
            let command = try JailbreakCommands.expand(template, [:], field: "screenshot")
            output = try await connection.run(command, timeout: timeout, step: step)
        }
        guard output.succeeded, !output.stdout.isEmpty else {
            throw SSHError.remoteCommandFailed(
                device: device, step: step,
                command: template.isEmpty ? "touch /tmp/take_screenshot" : template,
                exitStatus: output.exitStatus, stderr: "the command produced no image. " + output.stderrText)
        }
        return output.stdout
    }

    /// A file of the app's data, nil when it does not exist: in the app's data container first
    /// (`/var/mobile/Containers/Data/Application/*/Documents/ha-log.txt`, the newest), then in the
    /// mobile user's home (`/var/mobile/Documents/ha-log.txt`, an app in /Applications), as the app's
    /// own script looks for its log.
    public func mobileFile(_ relativePath: String) async throws -> Data? {
        let path = config.mobileDirectory + "/" + relativePath
        let containers = config.mobileDirectory + "/Containers/Data/Application"
        return try await withConnection { connection in
            let q = ShellQuote.quote
            let output = try await connection.run(
                """
                f=$(ls -t \(q(containers))/*/\(q(relativePath)) 2>/dev/null | head -n 1)
                [ -n "$f" ] && [ -f "$f" ] || f=\(q(path))
                if [ -f "$f" ]; then echo present; cat "$f"; else echo absent; fi
                """, step: "reading \(relativePath)")
            guard output.stdout.starts(with: Data("present\n".utf8)) else { return nil }
            return output.stdout.dropFirst(8)
        }
    }

    // MARK: paths

    func temporary(_ name: String) -> String {
        (config.temporaryDirectory.hasSuffix("/")
            ? config.temporaryDirectory : config.temporaryDirectory + "/")
            + name
    }

    func paths(_ info: AppBundleInfo) -> (target: String, staging: String, hashFile: String) {
        let dir =
            config.installDirectory.hasSuffix("/")
            ? String(config.installDirectory.dropLast()) : config.installDirectory
        return (
            "\(dir)/\(info.directoryName)", "\(dir)/.hadeploy-staging-\(info.directoryName)",
            "\(dir)/.\(info.directoryName).hadeploy-hash"
        )
    }

    func preferencesPath(bundleID: String) -> String {
        config.mobileDirectory + "/Library/Preferences/\(bundleID).plist"
    }

    func backupParent(bundleID: String) -> String {
        config.mobileDirectory + "/Library/HADashboard-backups/\(bundleID)"
    }

    func placeholders(_ info: AppBundleInfo) -> [String: String] {
        let (target, staging, _) = paths(info)
        let executablePath = "\(target)/\(info.executable)"
        return [
            "app": target, "staged": "\(staging)/\(info.directoryName)", "name": info.name,
            "executable": info.executable, "bundle_id": info.bundleID, "install_dir": config.installDirectory,
            "owner": config.owner, "executable_path": executablePath,
            "executable_pattern": Self.commandLinePattern(executablePath),
        ]
    }

    /// A `pgrep -f` pattern (an extended regular expression) matching a command line that starts with
    /// exactly `path`: how iOS starts an app, argv[0] its executable's full path.
    static func commandLinePattern(_ path: String) -> String {
        var escaped = ""
        for character in path {
            if "\\.[]()*+?{}|^$".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        return "^" + escaped + "( |$)"
    }

    // MARK: install

    /// The copy actually sent: for iOS 10+ without Apple's signature and provisioning profile.
    private func prepared(_ app: URL) throws -> (URL, cleanup: () -> Void) {
        guard config.stripAppleSignature else { return (app, {}) }
        let manager = fileSystem
        // Beside the bundle (a run's private staging copy, or the build's products), never in the shared
        // temporary folder: a run killed with SIGKILL left `/tmp/hadeploy-jb-<UUID>` behind for good;
        // here the next run's staging clean-up or the build folder owns it.
        let scratch = app.deletingLastPathComponent().appendingPathComponent(
            ".hadeploy-unsigned-\(UUID().uuidString)")
        let copy = scratch.appendingPathComponent(app.lastPathComponent)
        do {
            try manager.createPrivateDirectory(at: scratch)
            try manager.copyItem(at: app, to: copy)
            for name in ["_CodeSignature", "embedded.mobileprovision"] {
                let item = copy.appendingPathComponent(name)
                if manager.fileExists(atPath: item.path) { try manager.removeItem(at: item) }
            }
        } catch {
            try? manager.removeItem(at: scratch)
            throw SSHError.localFileFailed(
                path: app.path, reason: "cannot prepare an unsigned copy: \(error)")
        }
        return (copy, { try? manager.removeItem(at: scratch) })
    }

    /// Archives the installed app and its preferences into a new backup directory; returns its path.
    private func backup(info: AppBundleInfo, on connection: SSHConnection) async throws -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        // Milliseconds too: backups sort by name, newest first, and two deploys within one second
        // (a quick redeploy) must not sort by their random suffix.
        formatter.dateFormat = "yyyyMMdd-HHmmss-SSS"
        let parent = backupParent(bundleID: info.bundleID)
        let directory = parent + "/" + formatter.string(from: clock.now()) + "-" + UUID().uuidString.prefix(4)
        let script = JailbreakScripts.backup(
            directory: directory, parent: parent, installDirectory: config.installDirectory,
            appDirectory: info.directoryName,
            archive: info.directoryName.replacingOccurrences(of: " ", with: "-") + "-before.tar.gz",
            preferences: preferencesPath(bundleID: info.bundleID), keep: max(1, config.backupsKept))
        let output = try await connection.execute(
            script, timeout: config.connection.timeouts.transfer, step: "backup")
        guard output.succeeded else {
            let reason = output.stderrText.trimmingCharacters(in: .whitespacesAndNewlines)
            throw SSHError.backupFailed(
                device: device,
                reason: reason.isEmpty ? "exit status \(output.exitStatus.map(String.init) ?? "?")" : reason)
        }
        return directory
    }

    /// What the sidecar next to the app records: the content hash, and for the executable the local hash
    /// it was sent with and the hash `ldid -S` left on the device.
    struct Sidecar {
        var contentHash = ""
        var executable: (path: String, local: String, signed: String)?

        init(contentHash: String, executable: (path: String, local: String, signed: String)?) {
            self.contentHash = contentHash
            self.executable = executable
        }

        init(text: String) {
            for line in text.split(separator: "\n").map(String.init) {
                let fields = line.split(separator: " ", maxSplits: 3).map(String.init)
                if fields.count == 1 {
                    contentHash = fields[0]
                } else if fields.count == 2, fields[0] == "content" {
                    contentHash = fields[1]
                } else if fields.count == 4, fields[0] == "signed" {
                    executable = (fields[3], fields[1], fields[2])
                }
            }
        }

        var text: String {
            var lines = ["content \(contentHash)"]
            if let executable {
                lines.append("signed \(executable.local) \(executable.signed) \(executable.path)")
            }
            return lines.joined(separator: "\n")
        }
    }

    private func install(
        app original: URL, info: AppBundleInfo, force: Bool, on connection: inout SSHConnection,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> InstallReport {
        let started = clock.now()
        // The signed build's entitlements, from its executable's code signature (read before the
        // signature is stripped): ldid applies them, or the app's keychain fails on the device.
        let entitlements = fileSystem.contents(
            atPath: original.resolvingSymlinksInPath().appendingPathComponent(info.executable).path
        ).flatMap { MachOEntitlements.xml(in: $0) }
        // A link to the bundle: the bundle itself is what is copied and sent.
        let (app, cleanup) = try prepared(original.resolvingSymlinksInPath())
        defer { cleanup() }
        let tree = try LocalTree(root: app, in: fileSystem)
        let hash = try tree.contentHash()
        let (target, staging, hashFile) = paths(info)
        let q = ShellQuote.quote
        let values = placeholders(info)
        let permissions = try JailbreakCommands.expand(
            config.commands.permissions, values, field: "permissions")
        let refresh = try JailbreakCommands.expand(
            config.commands.refreshIcons, values, field: "refresh icons")

        try await connection.run(
            "test -d \(q(config.installDirectory)) || { echo "
                + q("install directory \(config.installDirectory) does not exist")
                + " >&2; exit 1; }\n" + JailbreakScripts.recover(target: target, staging: staging),
            step: "checking the install directory")
        let backup = try await backup(info: info, on: connection)

        // What is installed, hashed on the device, against the local files.
        let listing = try await connection.execute(
            JailbreakScripts.listing(target: target), timeout: config.connection.timeouts.transfer,
            step: "hashing the installed app")
        let remote = listing.succeeded ? RemoteManifest(listing: listing.stdoutText) : RemoteManifest()
        let sidecar = Sidecar(
            text: try await connection.execute(
                "cat \(q(hashFile)) 2>/dev/null; exit 0", step: "reading the hash file"
            )
            .stdoutText)
        var localHashes: [String: String] = [:]
        var changed: [String] = []
        var localDirectories: Set<String> = []
        for entry in tree.entries {
            switch entry.kind {
            case .directory: localDirectories.insert(entry.path)
            case .symlink: changed.append(entry.path)
            case .file:
                let local = try tree.fileHash(entry)
                localHashes[entry.path] = local
                var installed = remote.files[entry.path]
                if let signed = sidecar.executable, signed.path == entry.path, installed == signed.signed {
                    installed = signed.local
                }
                if installed != local { changed.append(entry.path) }
            }
        }
        let removed =
            remote.files.keys.filter { localHashes[$0] == nil }.sorted()
            + remote.directories.filter { !localDirectories.contains($0) }.sorted()
        let installedExists = !remote.isEmpty
        if !force, installedExists, changed.isEmpty, removed.isEmpty {
            return InstallReport(
                installedPath: target, changed: false, method: nil, bytesSent: 0, contentHash: hash,
                seconds: clock.now().timeIntervalSince(started), backup: backup)
        }

        try await connection.run("mkdir -m 700 \(q(staging))", step: "preparing the staging directory")
        let staged = "\(staging)/\(info.directoryName)"
        let delta = installedExists && !force
        let sent = delta ? tree.keeping(files: Set(changed)) : tree
        let method: TransferMethod
        var signedRecord: (path: String, local: String, signed: String)?
        // From here the device holds a staging copy as big as the app. However this ends before the
        // swap removes it — the upload cut, a later step failing, the task cancelled (Ctrl-C) — it is
        // removed before the error goes up; what even that cannot reach goes with the next deploy.
        do {
            do {
                method = try await upload(
                    tree: sent, into: staging, name: delta ? "delta" : info.directoryName, on: &connection,
                    progress: progress)
            } catch let error as SSHError {
                if case .localFileFailed = error { throw error }
                let removedStaging = await discardStaging(target: target, staging: staging, after: connection)
                throw SSHError.transferInterrupted(
                    device: device, app: info.directoryName, installed: target, temporary: staging,
                    temporaryRemoved: removedStaging, reason: error.description)
            }
            signedRecord = try await finishStaged(
                info: info, staged: staged, staging: staging, delta: delta, removed: removed,
                localHashes: localHashes, permissions: permissions, entitlements: entitlements,
                on: connection)
            try await connection.run(
                JailbreakScripts.swap(
                    target: target, staged: staged, staging: staging, sidecar: hashFile,
                    record: Sidecar(contentHash: hash, executable: signedRecord).text),
                step: "moving the app into place")
        } catch {
            if case SSHError.transferInterrupted = error { throw error }
            _ = await discardStaging(target: target, staging: staging, after: connection)
            throw error
        }
        _ = try? await stop(info: info, on: connection)
        try await connection.run(
            refresh, timeout: config.refreshIconsTimeout, step: "refreshing the icon cache")
        try await connection.run(
            JailbreakScripts.clearCaches(mobile: config.mobileDirectory, bundleID: info.bundleID),
            step: "clearing the app's caches")
        var report = InstallReport(
            installedPath: target, changed: true, method: method,
            bytesSent: sent.totalBytes, contentHash: hash, seconds: clock.now().timeIntervalSince(started))
        report.filesSent =
            delta
            ? changed.sorted()
            : tree.entries.compactMap {
                if case .file = $0.kind { return $0.path }
                return nil
            }
        report.filesRemoved = removed
        report.backup = backup
        report.signed = signedRecord != nil
        let problem = Self.entitlementsProblem(entitlements)
        report.keychainEntitled = report.signed && problem == nil
        report.entitlementsProblem = report.signed ? problem : nil
        return report
    }

    /// Why `entitlements` (the build's, nil: none) will not give the app its keychain, or nil.
    static func entitlementsProblem(_ entitlements: Data?) -> String? {
        guard let entitlements else {
            return "the build's executable carries no entitlements (an unsigned build): ldid signed it "
                + "without them, so the app's keychain fails and it forgets its login at its next launch "
                + "without hadeploy — install a build signed by Xcode (a development profile)"
        }
        let parsed =
            try? PropertyListSerialization.propertyList(from: entitlements, format: nil) as? [String: Any]
        guard let identifier = parsed?["application-identifier"] as? String, !identifier.isEmpty else {
            return "the build's entitlements have no application-identifier: the app's keychain fails and "
                + "it forgets its login at its next launch without hadeploy"
        }
        return nil
    }

    /// Completes the staged app after the upload: a delta assembled with the installed app, ownership
    /// and modes, `ldid -S<entitlements>` on the executable (the jailbroken kernel only runs
    /// pseudo-signed code; the build's entitlements keep its keychain working). Returns what the
    /// sidecar records of the signing.
    private func finishStaged(
        info: AppBundleInfo, staged: String, staging: String, delta: Bool, removed: [String],
        localHashes: [String: String], permissions: String, entitlements: Data?, on connection: SSHConnection
    ) async throws -> (path: String, local: String, signed: String)? {
        let (target, _, _) = paths(info)
        let q = ShellQuote.quote
        let values = placeholders(info)
        if delta {
            try await connection.run(
                JailbreakScripts.assemble(target: target, staged: staged, delta: "\(staging)/delta"),
                stdin: Data(removed.map { $0 + "\n" }.joined().utf8),
                timeout: config.connection.timeouts.transfer,
                step: "assembling the new app")
        }
        try await connection.run(permissions, step: "setting ownership and modes")

        // ldid -S: the jailbroken kernel only runs pseudo-signed code.
        var signedRecord: (path: String, local: String, signed: String)?
        let executablePath = "\(staged)/\(info.executable)"
        let signTool = config.commands.sign.split(separator: " ").first.map(String.init) ?? ""
        if let local = localHashes[info.executable], !signTool.isEmpty {
            let probe = try await connection.execute(
                "command -v \(q(signTool)) >/dev/null 2>&1", step: "looking for \(signTool)")
            if probe.succeeded {
                var signValues = values
                signValues["staged_executable"] = executablePath
                signValues["entitlements"] = ""
                if let entitlements {
                    // Beside the staged app, in the private staging folder that goes with the swap.
                    let file = staging + "/entitlements.plist"
                    try await connection.run(
                        "umask 077 && cat > \(q(file))", stdin: entitlements, step: "sending the entitlements"
                    )
                    signValues["entitlements"] = file
                }
                let sign = try JailbreakCommands.expand(config.commands.sign, signValues, field: "sign")
                try await connection.run(sign, step: "signing \(info.executable) with \(signTool)")
                let rehash = try await connection.run(
                    JailbreakScripts.hashFunction + "\nhs \(q(executablePath))",
                    step: "hashing the signed executable")
                if let signed = RemoteManifest.singleHash(rehash.stdoutText) {
                    signedRecord = (info.executable, local, signed)
                }
            }
        }
        return signedRecord
    }

    /// Sends the tree as `parent/name`, SFTP first when allowed; returns the method used.
    private func upload(
        tree: LocalTree, into parent: String, name: String, on connection: inout SSHConnection,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> TransferMethod {
        try await SSHConnection.upload(
            tree: tree, into: parent, name: name, method: config.transfer, device: device, on: &connection,
            progress: progress)
    }

    /// Best effort, bounded: removes this run's staging copy after a failure (first putting back an app
    /// a cut swap parked there), over `connection` while it works, else over a new one. Not cancelled
    /// with the install: Ctrl-C cancels the install's task, and the device must be cleaned all the
    /// same. About 30 s at most; a device that cannot be reached keeps it until the next deploy.
    func discardStaging(target: String, staging: String, after connection: SSHConnection) async
        -> Bool
    {
        let command = JailbreakScripts.discard(target: target, staging: staging)
        var quick = config.connection
        quick.timeouts.connect = min(quick.timeouts.connect, 5)
        quick.timeouts.authentication = min(quick.timeouts.authentication, 5)
        return await Task.detached {
            if connection.abortedReason == nil,
                (try? await connection.execute(command, timeout: 8, step: "removing the staging copy"))?
                    .succeeded == true
            {
                return true
            }
            guard let fresh = try? await SSHConnection.connect(quick) else { return false }
            let removed =
                (try? await fresh.execute(command, timeout: 8, step: "removing the staging copy"))?
                .succeeded == true
            await fresh.close()
            return removed
        }.value
    }

    // MARK: launch / stop

    private func launchCommand(info: AppBundleInfo, parameters: ResolvedLaunch, argsFile: String) throws
        -> String
    {
        var values = Dictionary(uniqueKeysWithValues: JailbreakCommands.launchPlaceholders.map { ($0, "") })
        values.merge(placeholders(info)) { $1 }
        values.merge(parameters.placeholders) { $1 }
        values["args_file"] = argsFile
        return try JailbreakCommands.expand(config.commands.launch, values, field: "launch")
    }

    private func start(info: AppBundleInfo, parameters: ResolvedLaunch, on connection: SSHConnection)
        async throws
    {
        do {
            try await startUnscrubbed(info: info, parameters: parameters, on: connection)
        } catch let error as SSHError {
            // A launch command could echo what it read from stdin into its error output.
            guard case .remoteCommandFailed(let device, let step, let command, let status, var stderr) = error
            else {
                throw error
            }
            stderr = Secret.scrub(stderr, of: parameters.secretValues)
            throw SSHError.remoteCommandFailed(
                device: device, step: step, command: command, exitStatus: status, stderr: stderr)
        }
    }

    private func startUnscrubbed(
        info: AppBundleInfo, parameters: ResolvedLaunch, on connection: SSHConnection
    ) async throws {
        let step = "launching \(info.name)"
        let payload = parameters.stdinPayload
        let timeout = config.launchTimeout
        try await writePreferences(info: info, parameters: parameters, on: connection)
        if config.commands.screenshot.isEmpty {
            // The app looks for its trigger once per launch, after a dashboard rebuild.
            try await connection.run(
                "rm -f \(ShellQuote.quote(temporary("screenshot.png"))) && touch \(ShellQuote.quote(temporary("take_screenshot")))",
                step: "laying the screenshot trigger")
        }
        guard config.commands.launch.contains("{args_file}") else {
            let command = try launchCommand(info: info, parameters: parameters, argsFile: "")
            try await connection.run(command, stdin: payload, timeout: timeout, step: step)
            return
        }
        // The file is written from stdin under umask 077 in a fresh mktemp directory, so the token is
        // never on a command line; it is removed when the launch command ends.
        let created = try await connection.run(
            "umask 077 && d=$(mktemp -d /tmp/hadeploy-launch.XXXXXX) && cat > \"$d/args\" && echo \"$d\"",
            stdin: payload, step: step)
        let directory = created.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard directory.hasPrefix("/tmp/hadeploy-launch.") else {
            throw SSHError.remoteCommandFailed(
                device: device, step: step, command: "mktemp", exitStatus: created.exitStatus,
                stderr: "unexpected output while creating the arguments file")
        }
        let command = try launchCommand(info: info, parameters: parameters, argsFile: directory + "/args")
        let q = ShellQuote.quote(directory)
        try await connection.run(
            "( \(command) ); status=$?; rm -rf \(q); exit $status", stdin: payload, timeout: timeout,
            step: step)
    }

    /// Merges the launch keys into the app's preferences plist on the device (read first, written back
    /// as a binary plist, owner mobile, mode 0600); the token travels on stdin only.
    private func writePreferences(
        info: AppBundleInfo, parameters: ResolvedLaunch, on connection: SSHConnection
    )
        async throws
    {
        guard !parameters.settings.isEmpty, !info.bundleID.isEmpty else { return }
        let path = preferencesPath(bundleID: info.bundleID)
        let q = ShellQuote.quote(path)
        // cfprefsd caches the domain and writes its copy back over a file replaced behind its back: it
        // is restarted first, as the app's own script does (launchd starts it again on demand).
        _ = try await connection.execute(
            "killall -9 cfprefsd >/dev/null 2>&1; exit 0", step: "restarting cfprefsd")
        let existing = try await connection.run(
            "if [ -f \(q) ]; then cat \(q); fi", step: "reading the app's preferences")
        // A past --reset's HAClearCredentials would wipe the login the app keeps at every start: only
        // a --reset sends it again.
        let merged = try LaunchPreferences.plist(
            parameters.preferences, mergedInto: existing.stdout, removing: ["HAClearCredentials"])
        try await connection.run(
            JailbreakScripts.installPreferences(path: path, owner: config.preferencesOwner), stdin: merged,
            step: "writing the app's preferences")
    }

    func stop(info: AppBundleInfo, on connection: SSHConnection) async throws -> Bool {
        let command = try JailbreakCommands.expand(config.commands.kill, placeholders(info), field: "kill")
        let output = try await connection.execute(command, step: "stopping \(info.name)")
        switch output.exitStatus {
        case 0: return true
        case 1: return false
        default:
            throw SSHError.remoteCommandFailed(
                device: device, step: "stopping \(info.name)", command: command,
                exitStatus: output.exitStatus,
                stderr: output.stderrText)
        }
    }
}
