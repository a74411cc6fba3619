import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import SSHTransport

/// The `DeviceDriver` for jailbroken devices over SSH (libssh), as the app's old deploy script did it:
/// backup on the device first, only the changed files sent, `ldid -S`, atomic rename into
/// /Applications, `killall`, `uicache`, this app's caches cleared, the launch keys merged into its
/// preferences plist, `open <bundle id>`; evidence from /var/mobile/Documents/ha-log.txt and the app's
/// own screenshot trigger.
public final class SSHDriver: DeviceDriver, @unchecked Sendable {
    public let deployer: JailbreakDeployer
    let plan: DevicePlan
    let crashDirectory: String
    let workDirectory: URL
    private let noteLock = NSLock()
    /// What the last step has to say besides its outcome (the app signed without its entitlements).
    private var note: String?

    public init(
        deployer: JailbreakDeployer, plan: DevicePlan, workDirectory: URL,
        crashDirectory: String = "/var/mobile/Library/Logs/CrashReporter"
    ) {
        self.deployer = deployer
        self.plan = plan
        self.workDirectory = workDirectory
        self.crashDirectory = crashDirectory
    }

    /// The SSH settings for a device from its plan; the password the plan names is read from
    /// `environment` now, and a planned key that is not there means the ssh-agent.
    public static func config(
        _ ssh: SSHBackend.Configuration, plan: DevicePlan, environment: [String: String],
        fileSystem: any FileSystem
    ) throws -> JailbreakDeployConfig {
        guard !ssh.host.isEmpty else {
            throw TransportUnavailable(
                device: plan.name, transport: "ssh",
                reason: "no host: set `host:` in devices.yaml (or its .env key)")
        }
        let agent = SSHAuthentication.agent(socketPath: environment["SSH_AUTH_SOCK"])
        let authentication: SSHAuthentication
        switch ssh.login {
        case .password(let reference):
            guard let password = reference.resolve(environment) else {
                throw TransportUnavailable(
                    device: plan.name, transport: "ssh",
                    reason: UnresolvedSecret(reference: reference).description)
            }
            authentication = .password(password)
        case .key(let path):
            authentication =
                fileSystem.fileExists(atPath: path)
                ? .privateKey(path: path, passphrase: nil) : agent
        case .agent:
            authentication = agent
        }
        var timeouts = SSHTimeouts()
        let deadlines = DriverDeadlines(plan: plan)
        // Within the plan's connect deadline (a status gives it only part of its own).
        timeouts.connect = min(
            deadlines.override(.connect) ?? timeouts.connect, deadlines.limit(.connect).seconds)
        if let install = deadlines.override(.install) { timeouts.transfer = install }
        let connection = SSHConnectionConfig(
            name: plan.name, host: ssh.host, port: ssh.port, user: ssh.user,
            authentication: authentication,
            knownHostsPath: ssh.knownHosts, fileSystem: fileSystem, legacyAlgorithms: ssh.legacyAlgorithms,
            timeouts: timeouts)
        var config = JailbreakDeployConfig(connection: connection)
        // iOS 9's and 10's kernels reject Apple's signature next to ldid's: sent without it (and without
        // the provisioning profile), as the app's own script does; ldid applies the build's entitlements.
        config.stripAppleSignature = (9...10).contains(Int(plan.ios.split(separator: ".").first ?? "") ?? 0)
        try config.apply(commandOverrides: ssh.commands)
        return config
    }

    public func connect() async throws -> ConnectedDevice {
        let connection = try await SSHConnection.connect(deployer.config.connection)
        await connection.close()
        return ConnectedDevice(
            udid: plan.udid?.value ?? deployer.config.connection.host, name: plan.name,
            productType: plan.productType,
            iosVersion: plan.ios, arch: plan.arch)
    }

    public func prepare() async throws {}

    /// The `.app` directory to send: an `.ipa`'s bundle as the run unpacked it before any device
    /// started (`ArtifactStaging`), the same for every device; never unpacked here, per device.
    func appDirectory(_ artifact: Artifact) throws -> URL {
        if let bundle = artifact.bundlePath { return URL(fileURLWithPath: bundle) }
        if deployer.fileSystem.isDirectory(atPath: artifact.path) {
            return URL(fileURLWithPath: artifact.path)
        }
        throw ArtifactError(
            path: artifact.path,
            problem: "an .ipa is sent over SSH as the bundle the run unpacks before the devices start, "
                + "and none was unpacked for it; nothing was installed")
    }

    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        let report = try await deployer.install(app: try appDirectory(artifact), force: force) { update in
            let percent = update.totalBytes > 0 ? Int(update.bytesSent * 100 / update.totalBytes) : 100
            progress(
                TransferProgress(
                    bytesDone: update.bytesSent, bytesTotal: update.totalBytes, percent: percent,
                    phase: "uploading"))
        }
        if let problem = report.entitlementsProblem {
            noteLock.withLock { note = "warning: \(problem)" }
        }
        return report.changed ? .installed : .unchanged
    }

    public func takeStepNote() async -> String? {
        noteLock.withLock {
            defer { note = nil }
            return note
        }
    }

    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        let app = try appDirectory(artifact)
        try await deployer.stop(app: app)
        // The app's preferences, merged on the device; the argument lines on the launch command's stdin.
        try await deployer.launch(app: app, settings: launch)
    }

    /// Crash reports named `<Executable>-YYYY-MM-DD-HHMMSS.{ips,crash,plist}` newer than `since`.
    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        let connection = try await SSHConnection.connect(deployer.config.connection)
        defer { Task { await connection.close() } }
        let listing = try await connection.execute(
            "ls -1 \(ProcessCommand.quote(crashDirectory)) 2>/dev/null", step: "listing crash reports")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd-HHmmss"
        var copied: [URL] = []
        for name in listing.stdoutText.split(separator: "\n").map(String.init)
        where name.hasPrefix(artifact.executable + "-") && !name.contains("/") {
            let stamp = name.dropFirst(artifact.executable.count + 1).prefix(17)
            guard let date = formatter.date(from: String(stamp)), date >= since.addingTimeInterval(-60) else {
                continue
            }
            // The name comes from the device (a file the app, running as mobile, may have named): quoted.
            let output = try await connection.run(
                "cat \(ProcessCommand.quote(crashDirectory + "/" + name))", step: "copying \(name)")
            try deployer.fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
            let local = directory.appendingPathComponent(name)
            try deployer.fileSystem.write(output.stdout, to: local, options: [])
            copied.append(local)
        }
        return copied
    }

    public func screenshot() async throws -> Data {
        try await deployer.screenshot()
    }

    /// Over SSH: the boot time (`sysctl kern.boottime`), free space (`df`), the installed app's
    /// Info.plist and its process (`ps`); no battery (no command on the device reads it).
    public func facts(_ query: StatusQuery) async -> DeviceFacts {
        let read: JailbreakStatus
        do {
            read = try await deployer.status(bundleID: query.bundleID)
        } catch {
            return .unreachable(SystemErrorText.message(error))
        }
        let device = ConnectedDevice(
            udid: plan.udid?.value ?? deployer.config.connection.host, name: plan.name,
            productType: plan.productType, iosVersion: plan.ios, arch: plan.arch)
        var installed: Fact<InstalledBuild?> = .unavailable(
            "which app is unknown: deploy once, or set BUNDLE_ID")
        if query.bundleID != nil {
            installed = .known(
                read.infoPlist.map { data in
                    let info =
                        (try? PropertyListSerialization.propertyList(from: data, format: nil))
                        as? [String: Any]
                    return InstalledBuild(
                        marketingVersion: info?["CFBundleShortVersionString"] as? String ?? "?",
                        buildNumber: info?["CFBundleVersion"] as? String ?? "?")
                })
        }
        return DeviceFacts(
            device: device, installed: installed,
            running: read.running.map { .known($0) }
                ?? .known(false),
            appLog: await appLog(query),
            battery: .unavailable("battery: a jailbroken device has no command that reads it over SSH"),
            storage: read.availableBytes.map {
                .known(StorageState(availableBytes: $0, capacityBytes: read.capacityBytes))
            } ?? .unavailable("`df` gave no figures for \(deployer.config.mobileDirectory)"),
            boot: read.bootedAt.map { .known(BootState(bootedAt: $0)) }
                ?? .unavailable("`sysctl -n kern.boottime` gave no boot time"))
    }

    /// An app in /Applications keeps its data in the mobile user's home (`Documents/ha-log.txt` is
    /// /var/mobile/Documents/ha-log.txt).
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        try await deployer.mobileFile(relativePath)
    }

    /// Restores the app and its preferences from the newest backup (or `backup`) and relaunches it.
    public func rollback(bundleID: String, backup: String?) async throws -> RollbackReport {
        try await deployer.rollback(bundleID: bundleID, backup: backup)
    }

    public func backups(bundleID: String) async throws -> [String] {
        try await deployer.backups(bundleID: bundleID)
    }
}

extension SSHError: TransientClassifying {
    public var isTransient: Bool { isTransientConnectFault }
}

/// Tries the primary transport; when it cannot connect, the fallback (the iPad 2: SSH, else USB).
public final class FallbackDriver: DeviceDriver, @unchecked Sendable {
    let primary: any DeviceDriver
    let fallback: any DeviceDriver
    private let lock = NSLock()
    private var chosen: (any DeviceDriver)?
    private var onFallback = false

    public init(primary: any DeviceDriver, fallback: any DeviceDriver) {
        self.primary = primary
        self.fallback = fallback
    }

    var active: any DeviceDriver { lock.withLock { chosen ?? primary } }

    public func connect() async throws -> ConnectedDevice {
        do {
            let device = try await primary.connect()
            lock.withLock { chosen = primary }
            return device
        } catch let primaryError {
            do {
                let device = try await fallback.connect()
                lock.withLock {
                    chosen = fallback
                    onFallback = true
                }
                return device
            } catch {
                throw FallbackFailed(primary: "\(primaryError)", fallback: "\(error)")
            }
        }
    }

    public func prepare() async throws { try await active.prepare() }
    /// The device over SSH when it answers there, else over its cable.
    public func facts(_ query: StatusQuery) async -> DeviceFacts {
        let first = await primary.facts(query)
        guard first.device == nil else { return first }
        let second = await fallback.facts(query)
        guard second.device == nil else { return second }
        return .unreachable(
            "\(FallbackFailed(primary: first.unreachable ?? "?", fallback: second.unreachable ?? "?"))")
    }
    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome { try await active.install(artifact, force: force, progress: progress) }
    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        try await active.launch(artifact, settings: launch)
    }
    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        try await active.crashReports(of: artifact, since: since, into: directory)
    }
    /// The active transport's screenshot; when that fails (the jailbroken app's trigger needs a rebuild
    /// of its dashboard), the other transport's (screenshotr over USB).
    public func screenshot() async throws -> Data {
        let current = active
        do {
            return try await current.screenshot()
        } catch {
            let other = lock.withLock { onFallback } ? primary : fallback
            guard let image = try? await other.screenshot() else { throw error }
            return image
        }
    }
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        try await active.appDataFile(artifact, relativePath: relativePath)
    }
}

struct FallbackFailed: Error, CustomStringConvertible {
    var primary: String
    var fallback: String
    var description: String { "not reachable: \(primary); fallback: \(fallback)" }
}
