import Foundation
import HADeployCore

extension USBDevice {
    /// debugserver over TLS from iOS 14 (DVTSecureSocketProxy), plain before (PROTOCOL.md §7.1).
    var debugserverServices: [String] {
        info.productVersion.major >= 14
            ? ["com.apple.debugserver.DVTSecureSocketProxy", "com.apple.debugserver"]
            : ["com.apple.debugserver"]
    }

    /// Launches an installed app with arguments and environment through debugserver, then detaches
    /// so it keeps running. `restart` kills a running instance first. Values in `secrets` never
    /// appear in logs or errors.
    public func launch(
        bundleID: String, arguments: [String] = [], environment: [String: String] = [:],
        restart: Bool = false,
        secrets: Set<String> = []
    ) async throws -> USBLaunchedApp {
        try requireLegacyDeveloperServices(for: "Launching apps")
        let redactor = Redactor(secrets)
        do {
            return try await serialized {
                // One lockdown session for the lookup, the kill and the launch: two handshakes less.
                let open = try await openLockdown()
                let app = try await lookupRunnable(bundleID, on: open)
                let executable = app.executable ?? ""
                if restart { _ = try await killUnserialized(processName: executable, on: open) }
                let executablePath = (app.path ?? "") + "/" + executable
                logger.info(
                    "launching \(bundleID) with \(arguments.count) argument(s): \(redactor.redact(arguments.joined(separator: " ")))"
                )
                let (session, _, descriptor) = try await startDeveloperService(debugserverServices, on: open)
                let launchedAt = options.clock.now()
                let settle = options.launchSettle
                let budget = timeouts.launch + settle
                let clock = options.clock
                let result = try await session.run("debugserver launch \(bundleID)", within: budget) {
                    let connection = try DebugServerConnection(
                        device: session.handle, descriptor: descriptor, identity: session.identity)
                    let launcher = DebugServerLauncher(
                        client: GDBRemoteClient(
                            transport: connection, identity: session.identity, clock: clock),
                        identity: session.identity, redactor: redactor)
                    return try launcher.launch(
                        executablePath: executablePath, workingDirectory: app.container, arguments: arguments,
                        environment: environment, settle: settle,
                        deadline: clock.deadline(after: budget - .milliseconds(500)))
                }
                if let stop = result.earlyStop {
                    logger.warning("\(bundleID) stopped right after launch: \(stop)")
                }
                return USBLaunchedApp(
                    bundleIdentifier: bundleID, executable: executable, processID: result.processID,
                    launchedAt: launchedAt, earlyStop: result.earlyStop, output: result.output)
            }
        } catch let error as MobileDeviceError {
            throw error.redacted(by: redactor)
        }
    }

    /// Kills the app if it runs. Returns whether an instance was found (best known).
    @discardableResult
    public func kill(bundleID: String) async throws -> Bool {
        try requireLegacyDeveloperServices(for: "Stopping apps")
        return try await serialized {
            let open = try await openLockdown()
            let app = try await lookupRunnable(bundleID, on: open)
            return try await killUnserialized(processName: app.executable ?? "", on: open)
        }
    }

    private func killUnserialized(processName: String, on open: (DeviceSession, LockdownClient)) async throws
        -> Bool
    {
        let (session, _, descriptor) = try await startDeveloperService(debugserverServices, on: open)
        let budget = timeouts.launch
        let clock = options.clock
        return try await session.run("debugserver kill \(processName)", within: budget) {
            let connection = try DebugServerConnection(
                device: session.handle, descriptor: descriptor, identity: session.identity)
            let launcher = DebugServerLauncher(
                client: GDBRemoteClient(transport: connection, identity: session.identity, clock: clock),
                identity: session.identity, redactor: .none)
            return try launcher.kill(
                processName: processName, deadline: clock.deadline(after: budget - .milliseconds(500)))
        }
    }

    /// The installed app with the paths a launch needs (PROTOCOL.md §3.2).
    private func lookupRunnable(_ bundleID: String, on open: (DeviceSession, LockdownClient)) async throws
        -> USBInstalledApp
    {
        let (session, lockdown) = open
        let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
        guard
            let app = try await proxy.lookup([bundleID], timeouts: timeouts)[bundleID].flatMap(
                USBInstalledApp.init)
        else {
            throw MobileDeviceError(
                .appNotInstalled, step: "installation_proxy Lookup \(bundleID)", device: identity,
                reason: "\(bundleID) is not installed", nextStep: "Install the app first.")
        }
        guard app.path != nil, let executable = app.executable, !executable.isEmpty else {
            throw MobileDeviceError(
                .launchFailed, step: "installation_proxy Lookup \(bundleID)", device: identity,
                reason: "the device did not report the app's Path and CFBundleExecutable",
                nextStep: "Reinstall the app; system apps cannot be launched this way.")
        }
        return app
    }
}
