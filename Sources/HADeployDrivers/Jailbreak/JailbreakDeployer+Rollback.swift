import Foundation
import HADeployCore
import SSHTransport

extension JailbreakDeployer {
    /// The complete backups of `bundleID` on the device, oldest first (names are UTC times).
    public func backups(bundleID: String) async throws -> [String] {
        if let problem = ArtifactNames.bundleIdentifierProblem(bundleID) {
            throw SSHError.invalidConfiguration(problem)
        }
        return try await withConnection { connection in
            try await backups(bundleID: bundleID, on: connection)
        }
    }

    private func backups(bundleID: String, on connection: SSHConnection) async throws -> [String] {
        let parent = ShellQuote.quote(backupParent(bundleID: bundleID))
        let output = try await connection.run(
            "cd \(parent) 2>/dev/null || exit 0; for d in *; do [ -f \"$d/complete\" ] && echo \"$d\"; done; exit 0",
            step: "listing backups")
        return output.stdoutText.split(separator: "\n").map(String.init).filter { !$0.isEmpty }.sorted()
    }

    /// The apps with a complete backup on the device (`HADashboard-backups/<bundle id>/<time>/`), each
    /// with its newest backup's name, newest first: what a rollback can put back when nothing here
    /// remembers which app the last deploy installed.
    public func backedUpApps() async throws -> [(bundleID: String, newest: String)] {
        let root = ShellQuote.quote(config.mobileDirectory + "/Library/HADashboard-backups")
        let output = try await withConnection { connection in
            try await connection.run(
                "cd \(root) 2>/dev/null || exit 0; for d in */*; do [ -f \"$d/complete\" ] && echo \"$d\"; done; exit 0",
                step: "listing backed-up apps")
        }
        var newest: [String: String] = [:]
        for line in output.stdoutText.split(separator: "\n") {
            let parts = line.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, ArtifactNames.bundleIdentifierProblem(parts[0]) == nil else { continue }
            if parts[1] > newest[parts[0], default: ""] { newest[parts[0]] = parts[1] }
        }
        return newest.map { (bundleID: $0.key, newest: $0.value) }.sorted {
            ($0.newest, $0.bundleID) > ($1.newest, $1.bundleID)
        }
    }

    /// Puts back the app and the preferences of a backup (the newest, or `name`) byte for byte, by the
    /// same atomic swap as a deploy, then stops the running app, refreshes icons and opens it again.
    public func rollback(bundleID: String, backup name: String? = nil) async throws -> RollbackReport {
        try config.commands.validate()
        // Both become paths under `rm -rf` and `mv` on the device: plain names only.
        if let problem = ArtifactNames.bundleIdentifierProblem(bundleID)
            ?? name.flatMap({ ArtifactNames.pathComponentProblem($0, what: "backup name") })
        {
            throw SSHError.invalidConfiguration(problem)
        }
        return try await withConnection { connection in
            let available = try await backups(bundleID: bundleID, on: connection)
            guard let chosen = name ?? available.last else {
                throw SSHError.rollbackUnavailable(
                    device: device, reason: "there is no backup of \(bundleID) on the device")
            }
            guard available.contains(chosen) else {
                throw SSHError.rollbackUnavailable(
                    device: device,
                    reason: "no complete backup named \(chosen) (there are: "
                        + (available.isEmpty ? "none" : available.joined(separator: ", ")) + ")")
            }
            return try await restore(bundleID: bundleID, backup: chosen, on: connection)
        }
    }

    private func restore(bundleID: String, backup name: String, on connection: SSHConnection) async throws
        -> RollbackReport
    {
        let q = ShellQuote.quote
        let directory = backupParent(bundleID: bundleID) + "/" + name
        let contents = try await connection.run(
            "cd \(q(directory)) && ls -1", step: "reading backup \(name)"
        ).stdoutText.split(separator: "\n").map(String.init)
        guard let archive = contents.first(where: { $0.hasSuffix(".app-before.tar.gz") }) else {
            throw SSHError.rollbackUnavailable(
                device: device, reason: "backup \(name) holds no app (none was installed when it was taken)")
        }
        let hasPreferences = contents.contains("preferences-before.plist")
        if hasPreferences {
            let stored = try await connection.run(
                "cat \(q(directory + "/preferences-before.sha256"))", step: "reading the preferences checksum"
            )
            let actual = try await connection.run(
                JailbreakScripts.hashFunction + "\nhs \(q(directory + "/preferences-before.plist"))",
                step: "checking the preferences checksum")
            guard let expected = RemoteManifest.singleHash(stored.stdoutText),
                expected == RemoteManifest.singleHash(actual.stdoutText)
            else {
                throw SSHError.rollbackUnavailable(
                    device: device, reason: "the preferences in backup \(name) do not match their SHA-256")
            }
        }
        let listing = try await connection.run(
            "tar tzf \(q(directory + "/" + archive)) | head -n 1", step: "reading the backup archive")
        let first = listing.stdoutText.split(separator: "\n").first.map(String.init) ?? ""
        let appDirectory = String(first.split(separator: "/").first ?? "")
        guard appDirectory.hasSuffix(".app"),
            ArtifactNames.pathComponentProblem(appDirectory, what: "app folder name") == nil
        else {
            throw SSHError.rollbackUnavailable(
                device: device, reason: "the archive in backup \(name) does not hold an .app directory")
        }
        let infoPlaceholder = AppBundleInfo(
            directoryName: appDirectory, infoPlist: Data(), bundleID: bundleID)
        let (target, staging, hashFile) = paths(infoPlaceholder)
        let info: AppBundleInfo
        // The unpacked app (as big as the app) leaves the device however this ends (a broken archive,
        // a cut connection, Ctrl-C); the swap removes it when all went well.
        do {
            try await connection.run(
                JailbreakScripts.recover(target: target, staging: staging)
                    + "\nmkdir -m 700 \(q(staging)) && tar xzf \(q(directory + "/" + archive)) -C \(q(staging))",
                timeout: config.connection.timeouts.transfer, step: "unpacking backup \(name)")
            let plist = try await connection.run(
                "cat \(q(staging + "/" + appDirectory + "/Info.plist"))",
                step: "reading the restored Info.plist")
            info = AppBundleInfo(directoryName: appDirectory, infoPlist: plist.stdout, bundleID: bundleID)
            if let problem = ArtifactNames.pathComponentProblem(info.executable, what: "CFBundleExecutable") {
                throw SSHError.rollbackUnavailable(
                    device: device, reason: "the app in backup \(name): \(problem)")
            }
            try await connection.run(
                JailbreakScripts.swap(
                    target: target, staged: staging + "/" + appDirectory, staging: staging, sidecar: hashFile,
                    record: "restored \(name)"),
                step: "moving the restored app into place")
        } catch {
            _ = await discardStaging(target: target, staging: staging, after: connection)
            throw error
        }
        let preferences = preferencesPath(bundleID: bundleID)
        let restorePreferences =
            hasPreferences
            ? "cp -p \(q(directory + "/preferences-before.plist")) \(q(preferences + ".hadeploy-new")) && "
                + "mv \(q(preferences + ".hadeploy-new")) \(q(preferences))"
            : "rm -f \(q(preferences))"
        try await connection.run(restorePreferences, step: "restoring the preferences")
        _ = try? await stop(info: info, on: connection)
        let values = placeholders(info)
        try await connection.run(
            try JailbreakCommands.expand(config.commands.refreshIcons, values, field: "refresh icons"),
            timeout: config.refreshIconsTimeout, step: "refreshing the icon cache")
        try await connection.run(
            JailbreakScripts.clearCaches(mobile: config.mobileDirectory, bundleID: bundleID),
            step: "clearing the app's caches")
        var launchValues = Dictionary(
            uniqueKeysWithValues: JailbreakCommands.launchPlaceholders.map { ($0, "") })
        launchValues.merge(values) { $1 }
        if !config.commands.launch.contains("{args_file}") {
            try await connection.run(
                try JailbreakCommands.expand(config.commands.launch, launchValues, field: "launch"),
                timeout: config.launchTimeout, step: "launching \(info.name)")
        }
        return RollbackReport(backup: directory, installedPath: target, preferencesRestored: hasPreferences)
    }
}
