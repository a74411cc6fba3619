import Foundation

/// Installs, starts, stops and photographs the dashboard app on a jailbroken iOS device over SSH.
///
/// Install = upload into a private staging directory next to the target, fix ownership and modes,
/// then replace `/Applications/<Name>.app` by renames, so an interrupted upload never touches the
/// installed app. An unchanged app (same content hash) is not sent again unless forced.
public struct JailbreakDeployer: Sendable {
    public let config: JailbreakDeployConfig

    public init(config: JailbreakDeployConfig) {
        self.config = config
    }

    private var device: String { config.connection.name }

    // MARK: public verbs (each opens and closes its own connection)

    /// Install (or skip if unchanged), stop the running app, refresh icons, launch with `launch`.
    public func deploy(
        app: URL, launch: LaunchParameters?, force: Bool = false,
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
    public func launch(app: URL, parameters: LaunchParameters) async throws {
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
    private func withConnection<T: Sendable>(
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

    /// Runs the screenshot command and returns the image bytes.
    public func screenshot(timeout: Double = 60) async throws -> Data {
        try await withConnection { connection in
            try await screenshot(timeout: timeout, on: connection)
        }
    }

    private func screenshot(timeout: Double, on connection: SSHConnection) async throws -> Data {
        let template = config.commands.screenshot
        let step = "screenshot"
        let output: SSHCommandOutput
        if template.contains("{output}") {
            let path = "/tmp/hadeploy-screenshot-\(UUID().uuidString).png"
            let command = try JailbreakCommands.expand(template, ["output": path], field: "screenshot")
            let quoted = ShellQuote.quote(path)
            output = try await connection.run(
                "\(command) && cat \(quoted); status=$?; rm -f \(quoted); exit $status", timeout: timeout,
                step: step)
        } else {
            let command = try JailbreakCommands.expand(template, [:], field: "screenshot")
            output = try await connection.run(command, timeout: timeout, step: step)
        }
        guard !output.stdout.isEmpty else {
            throw SSHError.remoteCommandFailed(
                device: device, step: step, command: template, exitStatus: output.exitStatus,
                stderr: "the command produced no image. " + output.stderrText)
        }
        return output.stdout
    }

    // MARK: paths

    private func paths(_ info: AppBundleInfo) -> (target: String, staging: String, hashFile: String) {
        let dir =
            config.installDirectory.hasSuffix("/")
            ? String(config.installDirectory.dropLast()) : config.installDirectory
        return (
            "\(dir)/\(info.directoryName)", "\(dir)/.hadeploy-staging-\(info.directoryName)",
            "\(dir)/.\(info.directoryName).hadeploy-hash"
        )
    }

    private func placeholders(_ info: AppBundleInfo) -> [String: String] {
        let (target, staging, _) = paths(info)
        return [
            "app": target, "staged": "\(staging)/\(info.directoryName)", "name": info.name,
            "executable": info.executable, "bundle_id": info.bundleID, "install_dir": config.installDirectory,
            "owner": config.owner,
        ]
    }

    // MARK: install

    private func install(
        app: URL, info: AppBundleInfo, force: Bool, on connection: inout SSHConnection,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> InstallReport {
        let started = Date()
        let tree = try LocalTree(root: app)
        let hash = try tree.contentHash()
        let (target, staging, hashFile) = paths(info)
        let q = ShellQuote.quote
        let values = placeholders(info)
        let permissions = try JailbreakCommands.expand(
            config.commands.permissions, values, field: "permissions")
        let refresh = try JailbreakCommands.expand(
            config.commands.refreshIcons, values, field: "refresh icons")

        if !force {
            let check = try await connection.run(
                "if [ -d \(q(target)) ] && [ -f \(q(hashFile)) ]; then cat \(q(hashFile)); fi",
                step: "checking the installed app")
            if check.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == hash {
                return InstallReport(
                    installedPath: target, changed: false, method: nil, bytesSent: 0, contentHash: hash,
                    seconds: Date().timeIntervalSince(started))
            }
        }

        // A staging directory left by an interrupted deploy goes first.
        try await connection.run(
            "test -d \(q(config.installDirectory)) || { echo \"install directory \(config.installDirectory) does not "
                + "exist\" >&2; exit 1; }; rm -rf \(q(staging)) && mkdir -m 700 \(q(staging))",
            step: "preparing the staging directory")

        let method: TransferMethod
        do {
            method = try await upload(
                tree: tree, info: info, staging: staging, on: &connection, progress: progress)
        } catch let error as SSHError {
            if case .localFileFailed = error {
                _ = try? await connection.execute("rm -rf \(q(staging))", timeout: 15)
                throw error
            }
            let removed = await removeStaging(staging, after: connection)
            throw SSHError.transferInterrupted(
                device: device, app: info.directoryName, installed: target, temporary: staging,
                temporaryRemoved: removed, reason: error.description)
        }

        try await connection.run(permissions, step: "setting ownership and modes")
        // Two renames inside one directory: the installed app is either the old or the new one; if the
        // second rename fails the old one is put back.
        let staged = "\(staging)/\(info.directoryName)"
        let previous = "\(staging)/.previous"
        try await connection.run(
            """
            if [ -e \(q(target)) ]; then mv \(q(target)) \(q(previous)) || exit 1; fi
            if ! mv \(q(staged)) \(q(target)); then
              [ -e \(q(previous)) ] && mv \(q(previous)) \(q(target)); exit 1
            fi
            printf '%s\\n' \(hash) > \(q(hashFile)) && rm -rf \(q(staging))
            """, step: "moving the app into place")
        try await connection.run(
            refresh, timeout: config.refreshIconsTimeout, step: "refreshing the icon cache")
        return InstallReport(
            installedPath: target, changed: true, method: method, bytesSent: tree.totalBytes,
            contentHash: hash,
            seconds: Date().timeIntervalSince(started))
    }

    /// Sends the tree into `staging/<Name>.app`, SFTP first when allowed; returns the method used.
    private func upload(
        tree: LocalTree, info: AppBundleInfo, staging: String, on connection: inout SSHConnection,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> TransferMethod {
        let timeouts = config.connection.timeouts
        let report: @Sendable (UploadProgress) -> Void = { progress?($0) }
        let executor = connection.executor
        let destination = "\(staging)/\(info.directoryName)"
        if config.transfer != .scp {
            let sftpResult: Result<Void, SFTPHandle.Unavailable> = try await connection.withSession(
                "SFTP upload", timeout: timeouts.sftpInit + timeouts.transfer
            ) { session in
                let sftp: SFTPHandle
                do {
                    sftp = try SFTPHandle(
                        session: session, executor: executor, initTimeout: timeouts.sftpInit)
                } catch let unavailable as SFTPHandle.Unavailable {
                    return .failure(unavailable)
                }
                try sftp.upload(tree: tree, to: destination, progress: report)
                sftp.finish()
                return .success(())
            }
            switch sftpResult {
            case .success:
                return .sftp
            case .failure(let unavailable):
                guard config.transfer == .auto else {
                    throw SSHError.sessionFailed(
                        device: device, step: "SFTP upload", reason: unavailable.reason)
                }
            }
        }
        if connection.executor.abortedReason != nil {
            // sftp_init timed out and the watchdog closed the connection: SCP needs a new one.
            await connection.close()
            connection = try await SSHConnection.connect(config.connection)
        }
        let parent = staging
        let name = info.directoryName
        try await connection.withSession("SCP upload", timeout: timeouts.transfer) { session in
            try SCPSink(session: session).upload(tree: tree, into: parent, name: name, progress: report)
        }
        return .scp
    }

    /// Best effort, bounded: removes the staging directory, over a new connection if the old one died.
    private func removeStaging(_ staging: String, after connection: SSHConnection) async -> Bool {
        let command = "rm -rf \(ShellQuote.quote(staging))"
        if connection.executor.abortedReason == nil,
            (try? await connection.execute(command, timeout: 15))?.succeeded == true
        {
            return true
        }
        var quick = config.connection
        quick.timeouts.connect = min(quick.timeouts.connect, 10)
        quick.timeouts.authentication = min(quick.timeouts.authentication, 10)
        guard let fresh = try? await SSHConnection.connect(quick) else { return false }
        let removed = (try? await fresh.execute(command, timeout: 15))?.succeeded == true
        await fresh.close()
        return removed
    }

    // MARK: launch / stop

    private func launchCommand(info: AppBundleInfo, parameters: LaunchParameters, argsFile: String) throws
        -> String
    {
        var values = Dictionary(uniqueKeysWithValues: JailbreakCommands.launchPlaceholders.map { ($0, "") })
        values.merge(placeholders(info)) { $1 }
        values.merge(parameters.placeholders) { $1 }
        values["args_file"] = argsFile
        return try JailbreakCommands.expand(config.commands.launch, values, field: "launch")
    }

    private func start(info: AppBundleInfo, parameters: LaunchParameters, on connection: SSHConnection)
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
            for secret in parameters.secretValues {
                stderr = stderr.replacingOccurrences(of: secret, with: "***")
            }
            throw SSHError.remoteCommandFailed(
                device: device, step: step, command: command, exitStatus: status, stderr: stderr)
        }
    }

    private func startUnscrubbed(
        info: AppBundleInfo, parameters: LaunchParameters, on connection: SSHConnection
    ) async throws {
        let step = "launching \(info.name)"
        let payload = parameters.stdinPayload
        let timeout = config.launchTimeout
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

    private func stop(info: AppBundleInfo, on connection: SSHConnection) async throws -> Bool {
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
