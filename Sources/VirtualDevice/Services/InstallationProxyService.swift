import Foundation

/// com.apple.mobile.installation_proxy (PROTOCOL.md §3): Browse, Lookup, Install/Upgrade, Uninstall.
struct InstallationProxyService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    /// Apps per Browse page (real devices page too; the clients need `CurrentAmount`).
    static let pageSize = 20

    func run() async throws {
        while true {
            let request = try await stream.readDictionary(timeout: .seconds(600))
            let options = request["ClientOptions"] as? [String: Any] ?? [:]
            switch request["Command"] as? String ?? "" {
            case "Browse":
                try await browse(options)
            case "Lookup":
                try await lookup(options)
            case "Install", "Upgrade":
                let command = request["Command"] as? String ?? "Install"
                try await install(
                    command: command, packagePath: request["PackagePath"] as? String, options: options)
            case "Uninstall":
                try await uninstall(request["ApplicationIdentifier"] as? String)
            case "CheckCapabilitiesMatch":
                try await stream.writePropertyList(["LookupResult": true, "Status": "Complete"])
            default:
                try await stream.writePropertyList(["Error": "UnknownCommand", "Status": "Failed"])
            }
        }
    }

    // MARK: Browse / Lookup

    private func applications(type: String?) async -> [[String: Any]] {
        let user = await runtime.installedApps.map { appDictionary($0) }
        let version = runtime.profile.productVersion
        let system = SystemAppCatalog.entries(major: runtime.profile.majorVersion).map {
            entry -> [String: Any] in
            [
                "CFBundleIdentifier": entry.bundleIdentifier, "CFBundleDisplayName": entry.name,
                "CFBundleName": entry.name, "CFBundleExecutable": entry.executable,
                "CFBundleVersion": version,
                "CFBundleShortVersionString": version, "ApplicationType": "System",
                "Path": "/Applications/\(entry.executable).app", "StaticDiskUsage": 5_000_000,
                "DynamicDiskUsage": 0,
            ]
        }
        switch type {
        case "User": return user
        case "System": return system
        default: return system + user
        }
    }

    private func appDictionary(_ app: VirtualInstalledApp) -> [String: Any] {
        var entry: [String: Any] = [
            "CFBundleIdentifier": app.bundleIdentifier,
            "CFBundleDisplayName": app.displayName,
            "CFBundleName": app.displayName,
            "CFBundleExecutable": app.executable,
            "CFBundleVersion": app.bundleVersion,
            "ApplicationType": "User",
            "Path": app.path,
            "Container": app.container,
            "StaticDiskUsage": app.staticDiskUsage,
            "DynamicDiskUsage": 4096,
            "SignerIdentity": "Apple Development",
            "UIDeviceFamily": [1, 2],
        ]
        if let short = app.shortVersion { entry["CFBundleShortVersionString"] = short }
        return entry
    }

    private func filtered(_ entry: [String: Any], _ attributes: [String]?) -> [String: Any] {
        guard let attributes, !attributes.isEmpty else { return entry }
        return entry.filter { attributes.contains($0.key) }
    }

    private func browse(_ options: [String: Any]) async throws {
        let type = options["ApplicationType"] as? String
        let attributes = options["ReturnAttributes"] as? [String]
        let apps = await applications(type: type == "Any" ? nil : type).map { filtered($0, attributes) }
        var index = 0
        while index < apps.count {
            let page = Array(apps[index..<min(index + Self.pageSize, apps.count)])
            try await stream.writePropertyList([
                "Status": "BrowsingApplications", "Total": apps.count, "CurrentIndex": index,
                "CurrentAmount": page.count, "CurrentList": page,
            ])
            index += page.count
        }
        try await stream.writePropertyList(["Status": "Complete"])
    }

    private func lookup(_ options: [String: Any]) async throws {
        let type = options["ApplicationType"] as? String
        let attributes = options["ReturnAttributes"] as? [String]
        let wanted = options["BundleIDs"] as? [String]
        var result: [String: Any] = [:]
        for app in await applications(type: type == "Any" ? nil : type) {
            guard let identifier = app["CFBundleIdentifier"] as? String else { continue }
            if let wanted, !wanted.contains(identifier) { continue }
            result[identifier] = filtered(app, attributes)
        }
        try await stream.writePropertyList(["LookupResult": result, "Status": "Complete"])
    }

    // MARK: Install

    private func progress(_ percent: Int, _ status: String) async throws {
        try await stream.writePropertyList(["PercentComplete": percent, "Status": status])
    }

    private func fail(_ error: InstallError) async throws {
        var reply: [String: Any] = [
            "Error": error.name, "ErrorDescription": error.description, "Status": "Failed",
        ]
        if let detail = error.detail { reply["ErrorDetail"] = detail }
        runtime.logger.info("install failed: \(error.name): \(error.description)")
        try await stream.writePropertyList(reply)
    }

    private func install(command: String, packagePath: String?, options: [String: Any]) async throws {
        guard let packagePath, !packagePath.isEmpty else {
            return try await fail(InstallError("MissingPackagePath", "No PackagePath given"))
        }
        // The package is where an AFC client put it: resolved inside the media root like AFC's own
        // paths, links followed there and never out of it.
        let relative = ConfinedRoot.components(packagePath).joined(separator: "/")
        var isDirectory: ObjCBool = false
        let fileSystem = runtime.fileSystem
        guard
            let package = try? ConfinedRoot(runtime.paths.media, fileSystem: fileSystem).hostURL(packagePath),
            fileSystem.fileExists(atPath: package.path, isDirectory: &isDirectory)
        else {
            return try await fail(
                InstallError(
                    "PackageInspectionFailed", "Failed to open package path /var/mobile/Media/\(relative)",
                    detail: 0xE800_8015))
        }
        try await progress(5, "CreatingStagingDirectory")
        if runtime.closesConnection(at: .install) {
            runtime.logger.info("closeConnection fault: closing the install connection")
            stream.close()
            return
        }
        if runtime.isStalled(at: .install) {
            runtime.logger.info("stall fault: install never completes")
            let deadline = ContinuousClock.now + .seconds(600)
            while !stream.isClosed && ContinuousClock.now < deadline {
                _ = try? await stream.read(upTo: 4096, timeout: .seconds(5))
            }
            return
        }
        let staging = runtime.paths.root.appendingPathComponent("staging-\(UUID().uuidString)")
        defer { try? fileSystem.removeItem(at: staging) }
        do {
            try await progress(15, "ExtractingPackage")
            let packageIsDirectory = isDirectory.boolValue
            let bundle = try await Offload.run {
                try self.extract(package, isDirectory: packageIsDirectory, into: staging)
            }
            try await progress(20, "InspectingPackage")
            let developer = (options["PackageType"] as? String) == "Developer" || isDirectory.boolValue
            let (profile, chipID) = (runtime.profile, runtime.model?.chipID ?? 0)
            let expected = options["CFBundleIdentifier"] as? String
            let info = try await Offload.run {
                try AppBundleInfo.inspect(
                    bundle, for: profile, chipID: chipID, expectedIdentifier: expected, fileSystem: fileSystem
                )
            }
            try await progress(20, "TakingInstallLock")
            try await progress(30, "PreflightingApplication")
            try await progress(30, "InstallingEmbeddedProfile")
            try await progress(40, "VerifyingApplication")
            if let delay = runtime.verificationDelay {
                try await Task.sleep(for: .seconds(delay))
            }
            // Its signature and profile, as installd checks them before anything is placed.
            let (udid, installed) = (runtime.udid, MisagentService.installed(runtime))
            try await Offload.run {
                try ProfileVerification.check(
                    bundle: info.bundleURL, bundleID: info.bundleIdentifier, udid: udid, installed: installed,
                    fileSystem: fileSystem,
                    now: EmulatorClock.now())
            }
            if let failure = runtime.installFailure {
                throw InstallError(
                    failure.error, failure.description ?? "Injected failure for \(info.bundleIdentifier)")
            }
            // Verified, the app's profile is installed with it (misagent lists it from now on).
            try? MisagentService.installEmbeddedProfile(of: info.bundleURL, runtime: runtime)
            try await progress(50, "CreatingContainer")
            try await progress(60, "InstallingApplication")
            let app = try await place(info, packageType: developer ? "developer" : "ipa")
            try await progress(70, "PostflightingApplication")
            try await progress(80, "SandboxingApplication")
            try await progress(90, "GeneratingApplicationMap")
            await runtime.recordInstall(app)
            // installd consumes the staged package.
            try? fileSystem.removeItem(at: package)
            try await stream.writePropertyList(["Status": "Complete"])
        } catch let error as InstallError {
            try await fail(error)
        }
    }

    /// Returns the `.app` directory to inspect: the uploaded directory itself, or `Payload/X.app`
    /// extracted from the IPA (a zip) into `staging`.
    private func extract(_ package: URL, isDirectory: Bool, into staging: URL) throws -> URL {
        if isDirectory {
            if package.pathExtension == "app" { return package }
            throw InstallError(
                "PackageInspectionFailed", "\(package.lastPathComponent) is not an .app bundle",
                detail: 0xE800_8015)
        }
        do {
            try runtime.fileSystem.createDirectory(at: staging, withIntermediateDirectories: true)
            try runtime.fileSystem.unzipItem(at: package, to: staging)
        } catch {
            throw InstallError(
                "PackageExtractionFailed",
                "Failed to extract package \(package.lastPathComponent): not a valid zip archive")
        }
        let payload = staging.appendingPathComponent("Payload")
        let apps = ((try? runtime.fileSystem.contentsOfDirectory(atPath: payload.path)) ?? []).filter {
            $0.hasSuffix(".app")
        }
        guard apps.count == 1 else {
            throw InstallError(
                "PackageInspectionFailed",
                apps.isEmpty
                    ? "Failed to get bundle from package: no Payload/*.app in \(package.lastPathComponent)"
                    : "Package contains more than one app bundle", detail: 0xE800_8015)
        }
        return payload.appendingPathComponent(apps[0])
    }

    /// Copies the bundle into the device's application store; an upgrade keeps its containers.
    private func place(_ info: AppBundleInfo, packageType: String) async throws -> VirtualInstalledApp {
        let existing = await runtime.app(bundleIdentifier: info.bundleIdentifier)
        let store = runtime.paths.applications.appendingPathComponent(info.bundleIdentifier)
        let destination = store.appendingPathComponent(info.bundleURL.lastPathComponent)
        do {
            let (source, fileSystem) = (info.bundleURL, runtime.fileSystem)
            try await Offload.run {
                try? fileSystem.removeItem(at: store)
                try fileSystem.createDirectory(at: store, withIntermediateDirectories: true)
                try fileSystem.moveItem(at: source, to: destination)
            }
        } catch {
            throw InstallError("ApplicationMoveFailed", "Failed to move the bundle into place: \(error)")
        }
        let bundleUUID =
            existing.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent().lastPathComponent }
            ?? UUID().uuidString
        let container =
            existing?.container ?? "/private/var/mobile/Containers/Data/Application/\(UUID().uuidString)"
        // iOS 9 kept bundles under /private/var/containers/Bundle too (since iOS 8).
        return VirtualInstalledApp(
            bundleIdentifier: info.bundleIdentifier, displayName: info.displayName,
            bundleVersion: info.bundleVersion,
            shortVersion: info.shortVersion, executable: info.executable, architectures: info.architectures,
            path:
                "/private/var/containers/Bundle/Application/\(bundleUUID)/\(info.bundleURL.lastPathComponent)",
            container: container, staticDiskUsage: info.diskUsage, packageType: packageType)
    }

    // MARK: Uninstall

    private func uninstall(_ identifier: String?) async throws {
        guard let identifier, !identifier.isEmpty else {
            return try await fail(
                InstallError("MissingApplicationIdentifier", "No ApplicationIdentifier given"))
        }
        try await progress(50, "RemovingApplication")
        _ = await runtime.recordUninstall(bundleIdentifier: identifier)
        try await progress(90, "GeneratingApplicationMap")
        try await stream.writePropertyList(["Status": "Complete"])
    }
}
