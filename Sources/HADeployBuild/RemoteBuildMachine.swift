import Foundation
import HADeployCore
import SSHTransport

/// A macOS builder reached over SSH (`build_host: ssh://user@mac-mini[:port][/work/dir]`).
///
/// `prepare` sends the source tree once per run (git archive of HEAD, the uncommitted changes, the
/// deletions) into `<dir>/src`, keeping the previous `.hadeploy/` (derived data, XcodeGen stamp) and
/// generated project so builds there stay incremental. The plan's commands then run in `<dir>/src`
/// with Homebrew's directories on PATH (a non-interactive SSH login on macOS has only /usr/bin:/bin).
/// An App Store Connect key file given locally is copied into `<dir>/secrets/` (mode 600) for the
/// build and removed by `finish`. Every step has a deadline; connections are reused, one command at a
/// time each, so flavours with different Xcodes still build side by side.
public actor RemoteBuildMachine: BuildMachine {
    public nonisolated let name: String
    nonisolated let config: SSHConnectionConfig
    /// The work directory as written (absolute, `~/…`, or relative to the login directory).
    nonisolated let directory: String
    let localRoot: URL
    let runner: any ProcessRunner
    /// The local files: the snapshot sent, the products fetched, a key file sent along.
    let fileSystem: any FileSystem
    /// Executables the local plan uses, by tool name (`xcodebuild`: a local stand-in path…).
    let localTools: [String: String]
    /// Executables to use there instead, by tool name (relative paths resolve in the source tree).
    let remoteTools: [String: String]
    let stepTimeout: Double

    private var idle: [SSHConnection] = []
    private var preparation: Task<String, any Error>?
    private var uploadedKeys: [String: Task<String, any Error>] = [:]

    public init(
        address: String, authentication: SSHAuthentication, knownHostsPath: String, localRoot: URL,
        runner: any ProcessRunner, fileSystem: any FileSystem, localUser: String,
        localTools: [String: String] = [:], remoteTools: [String: String] = [:], stepTimeout: Double = 300
    ) throws {
        var config = try SSHConnectionConfig.parse(
            url: address, authentication: authentication, knownHostsPath: knownHostsPath,
            fileSystem: fileSystem,
            name: address)
        config.timeouts = SSHTimeouts(
            connect: 20, authentication: 20, command: stepTimeout, sftpInit: 15, transfer: stepTimeout)
        if URLComponents(string: address)?.user == nil {
            // A Mac's builder account is rarely root: default to the local user name, as ssh does.
            config.user = localUser
        }
        self.config = config
        self.name = address
        var path = URLComponents(string: address)?.path ?? ""
        // ssh://mac/~/builds means ~/builds there, not a directory named "~" at the root.
        if path.hasPrefix("/~") { path.removeFirst() }
        self.directory = path.isEmpty || path == "/" ? Self.defaultDirectory(for: localRoot) : path
        self.localRoot = localRoot
        self.fileSystem = fileSystem
        self.runner = runner
        self.localTools = localTools
        self.remoteTools = remoteTools
        self.stepTimeout = stepTimeout
    }

    /// `.hadeploy-builds/<repo>-<hash of this checkout's path and host>` under the login directory: two
    /// checkouts (or two developers) never share a tree.
    static func defaultDirectory(for root: URL) -> String {
        // The kernel's host name: Foundation's `hostName` may wait on a DNS lookup.
        var node = utsname()
        uname(&node)
        let host = withUnsafeBytes(of: node.nodename) {
            String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
        let identity = "\(host):\(root.standardizedFileURL.path)"
        let hash = BuildExecutor.sha256(Data(identity.utf8)).prefix(10)
        let name = root.lastPathComponent.filter { $0.isLetter || $0.isNumber || "-_.".contains($0) }
        return ".hadeploy-builds/\(name.isEmpty ? "app" : name)-\(hash)"
    }

    /// A shell word for the work directory: `~/x` keeps its meaning, everything else is quoted.
    nonisolated var directoryWord: String {
        if directory == "~" { return "\"$HOME\"" }
        if directory.hasPrefix("~/") {
            return "\"$HOME\"/" + ProcessCommand.quote(String(directory.dropFirst(2)))
        }
        return ProcessCommand.quote(directory)
    }

    // MARK: Connections

    private func connection() async throws -> SSHConnection {
        if let reused = idle.popLast() { return reused }
        return try await SSHConnection.connect(config)
    }

    /// Runs one remote command on a pooled connection. A connection that failed (or timed out, which
    /// shuts it down) is closed, never reused.
    private func execute(
        _ command: String, stdin: Data? = nil, timeout: Double? = nil, step: String,
        outputLimit: Int = 64 << 20, holdStdinOpen: Bool = false
    ) async throws -> SSHCommandOutput {
        let connection = try await connection()
        do {
            let output = try await connection.execute(
                command, stdin: stdin, timeout: timeout ?? stepTimeout, step: step, outputLimit: outputLimit,
                holdStdinOpen: holdStdinOpen)
            idle.append(connection)
            return output
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Like `execute`, but a failing command throws with its error output. Only for commands that
    /// carry no secret (the command line is part of the error).
    @discardableResult
    private func checked(_ command: String, stdin: Data? = nil, timeout: Double? = nil, step: String)
        async throws -> SSHCommandOutput
    {
        let output = try await execute(command, stdin: stdin, timeout: timeout, step: step)
        guard output.succeeded else {
            throw SSHError.remoteCommandFailed(
                device: name, step: step, command: command, exitStatus: output.exitStatus,
                stderr: output.stderrText.isEmpty ? String(output.stdoutText.suffix(2048)) : output.stderrText
            )
        }
        return output
    }

    // MARK: BuildMachine

    /// The absolute source directory there, once the tree is sent.
    private func sourceRoot() async throws -> String {
        if let preparation { return try await preparation.value }
        let task = Task { try await self.upload() }
        preparation = task
        return try await task.value
    }

    public func prepare() async throws {
        _ = try await sourceRoot()
    }

    private func upload() async throws -> String {
        let snapshot = try await SourceSnapshot.take(
            root: localRoot, runner: runner, fileSystem: fileSystem, extraPaths: ["Generated"])
        let work = try await checked(
            "mkdir -p \(directoryWord) && cd \(directoryWord) && pwd -P", timeout: 30,
            step: "creating the work directory"
        ).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard work.hasPrefix("/") else {
            throw SSHError.invalidConfiguration("the build host's work directory resolved to '\(work)'")
        }
        let dir = ProcessCommand.quote(work)
        // Uploads get a deadline by size: 1 MB/s at the least (a slow VPN), never under the step's.
        func deadline(_ data: Data) -> Double { max(stepTimeout, Double(data.count) / 1_000_000 + 60) }
        try await checked(
            "cat > \(dir)/upload-head.tar", stdin: snapshot.head, timeout: deadline(snapshot.head),
            step: "sending the source tree")
        if let changes = snapshot.changes {
            try await checked(
                "cat > \(dir)/upload-changes.tar", stdin: changes, timeout: deadline(changes),
                step: "sending the uncommitted changes")
        }
        try await checked(
            "cat > \(dir)/upload-deleted.list", stdin: Data(snapshot.deleted.joined(separator: "\0").utf8),
            step: "sending the list of deleted files")
        // A fresh tree each run (no stale files), keeping what makes the next build there incremental;
        // a key left by a run that was killed before `finish` goes now.
        let script = """
            set -e
            cd \(dir)
            rm -rf src.next
            mkdir src.next
            tar -xf upload-head.tar -C src.next
            if [ -f upload-changes.tar ]; then tar -xf upload-changes.tar -C src.next; fi
            if [ -s upload-deleted.list ]; then (cd src.next && xargs -0 rm -f -- < ../upload-deleted.list); fi
            if [ -d src/.hadeploy ]; then mv src/.hadeploy src.next/.hadeploy; fi
            for kept in src/*.xcodeproj; do
                [ -e "$kept" ] || continue
                name=$(basename "$kept")
                [ -e "src.next/$name" ] || mv "$kept" "src.next/$name"
            done
            rm -rf src
            mv src.next src
            rm -f upload-head.tar upload-changes.tar upload-deleted.list
            rm -rf secrets
            """
        try await checked("/bin/sh -c \(ProcessCommand.quote(script))", step: "unpacking the source tree")
        return work + "/src"
    }

    public func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        try await run(command, in: ProcessCommand.quote(try await sourceRoot()), timeout: timeout)
    }

    public func query(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        try await run(command, in: "\"$HOME\"", timeout: timeout)
    }

    private func run(_ command: ProcessCommand, in directory: String, timeout: Duration) async throws
        -> ProcessOutput
    {
        var command = command
        command.workingDirectory = nil
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let output = try await execute(
            Self.stoppable(command.shellLine, in: directory), timeout: seconds,
            step: (command.executable as NSString).lastPathComponent, outputLimit: 256 << 20,
            holdStdinOpen: true)
        return ProcessOutput(
            status: output.exitStatus ?? -1, standardOutput: output.stdout, standardError: output.stderr)
    }

    /// A shell line running `command` in `directory` that stops it when this end goes away.
    ///
    /// Without a terminal, sshd sends no hangup when the connection drops, and a killed or interrupted
    /// hadeploy would leave xcodebuild running there (and the next run would replace the tree under
    /// it). So the command runs in the background while a watcher reads the channel's stdin, which
    /// hadeploy never closes: end-of-file there means the connection is gone, and the watcher
    /// terminates the command. fd 3 carries stdin past the shell's `/dev/null` for background jobs.
    /// It runs under /bin/sh whatever the login shell is (zsh on macOS, where `status` is read-only).
    static func stoppable(_ command: String, in directory: String) -> String {
        let script = """
            cd \(directory) || exit 125
            PATH=/opt/homebrew/bin:/usr/local/bin:$PATH; export PATH
            exec 3<&0
            \(command) </dev/null 3<&- &
            job=$!
            (cat <&3 >/dev/null 2>&1; kill -TERM $job 2>/dev/null) >/dev/null 2>&1 &
            watcher=$!
            exec 3<&-
            wait $job
            code=$?
            kill $watcher 2>/dev/null
            exit $code
            """
        return "/bin/sh -c " + ProcessCommand.quote(script)
    }

    private func remotePath(_ path: String) async throws -> String {
        ProcessCommand.quote(try await sourceRoot() + "/" + path)
    }

    public func read(_ path: String) async throws -> Data? {
        let file = try await remotePath(path)
        let output = try await execute(
            "if [ -f \(file) ]; then cat \(file); else exit 3; fi", timeout: 30, step: "reading \(path)")
        switch output.exitStatus {
        case 0: return output.stdout
        case 3: return nil
        default:
            throw SSHError.remoteCommandFailed(
                device: name, step: "reading \(path)", command: "cat \(file)", exitStatus: output.exitStatus,
                stderr: output.stderrText)
        }
    }

    public func write(_ data: Data, to path: String) async throws {
        let file = try await remotePath(path)
        try await checked(
            "mkdir -p \"$(dirname \(file))\" && cat > \(file)", stdin: data, timeout: 60,
            step: "writing \(path)")
    }

    public func exists(_ path: String) async throws -> Bool {
        let output = try await execute(
            "test -e \(try await remotePath(path))", timeout: 30, step: "looking for \(path)")
        return output.exitStatus == 0
    }

    public func fetch(_ path: String, into localDirectory: URL) async throws -> URL {
        let root = try await sourceRoot()
        let remote = root + "/" + path
        let parent = ProcessCommand.quote((remote as NSString).deletingLastPathComponent)
        let item = (remote as NSString).lastPathComponent
        let output = try await execute(
            "cd \(parent) && tar -cf - \(ProcessCommand.quote(item))", timeout: max(stepTimeout, 1800),
            step: "fetching \(item)", outputLimit: Int(Int32.max))
        guard output.succeeded else {
            throw SSHError.remoteCommandFailed(
                device: name, step: "fetching \(item)", command: "tar -cf - \(item)",
                exitStatus: output.exitStatus,
                stderr: output.stderrText)
        }
        try fileSystem.createDirectory(at: localDirectory, withIntermediateDirectories: true)
        let target = localDirectory.appendingPathComponent(item)
        try? fileSystem.removeItem(at: target)
        let archive = localDirectory.appendingPathComponent(".\(item).tar")
        try fileSystem.write(output.stdout, to: archive, options: [])
        defer { try? fileSystem.removeItem(at: archive) }
        _ = try await runner.checked(
            ProcessCommand("tar", ["-xf", archive.path, "-C", localDirectory.path]), timeout: .seconds(300))
        return target
    }

    /// Maps the plan's tools to the builder's (never a local stand-in path), and sends a local App Store
    /// Connect key file along, pointing `-authenticationKeyPath` at the copy.
    public func adapt(_ command: ProcessCommand) async throws -> ProcessCommand {
        var command = command
        // A script of the repository (`scripts/build.sh`) runs from the uploaded tree, as it is.
        let repositoryScript = command.executable.contains("/") && !command.executable.hasPrefix("/")
        let tool =
            localTools.first { $0.value == command.executable }?.key
            ?? (command.executable as NSString).lastPathComponent
        if !repositoryScript { command.executable = remoteTools[tool] ?? tool }
        if let index = command.arguments.firstIndex(of: "-authenticationKeyPath"),
            index + 1 < command.arguments.count
        {
            let local = command.arguments[index + 1]
            if fileSystem.isReadableFile(atPath: local) {
                command.arguments[index + 1] = try await uploadKey(local)
            }
        }
        return command
    }

    /// One upload per key, however many flavours ask at once: an actor's method resumes others while
    /// it awaits, so a second flavour would otherwise send the key again (`cat >` truncating it) while
    /// the first one's xcodebuild reads it.
    private func uploadKey(_ local: String) async throws -> String {
        if let upload = uploadedKeys[local] { return try await upload.value }
        let upload = Task { try await self.sendKey(local) }
        uploadedKeys[local] = upload
        return try await upload.value
    }

    private func sendKey(_ local: String) async throws -> String {
        let root = try await sourceRoot()
        let secrets = (root as NSString).deletingLastPathComponent + "/secrets"
        let remote = secrets + "/" + (local as NSString).lastPathComponent
        let data = try Data(contentsOf: URL(fileURLWithPath: local))
        // The key travels on stdin, never on a command line; the directory is private to the login user.
        try await checked(
            "umask 077 && mkdir -p \(ProcessCommand.quote(secrets)) && cat > \(ProcessCommand.quote(remote))",
            stdin: data, timeout: 60, step: "sending the App Store Connect key")
        return remote
    }

    public func sourcePath() async -> String? {
        try? await preparation?.value
    }

    public func finish() async {
        if !uploadedKeys.isEmpty, let root = try? await preparation?.value {
            let secrets = (root as NSString).deletingLastPathComponent + "/secrets"
            _ = try? await execute(
                "rm -rf \(ProcessCommand.quote(secrets))", timeout: 30, step: "removing the key")
            uploadedKeys = [:]
        }
        for connection in idle { await connection.close() }
        idle = []
    }
}
