import Foundation
import HADeployCore

/// What installd reads from an app bundle before installing it.
struct AppBundleInfo {
    let bundleURL: URL
    let bundleIdentifier: String
    let executable: String
    let bundleVersion: String
    let shortVersion: String?
    let displayName: String
    let architectures: [String]
    let diskUsage: Int

    /// A bundle identifier the device can name folders after.
    static func isValidIdentifier(_ identifier: String) -> Bool {
        !identifier.isEmpty && !identifier.hasPrefix(".") && identifier.count <= 255
            && identifier.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || $0 == "-" || $0 == "_" || $0 == "."
            }
    }

    /// Inspects `bundleURL` (an `X.app` directory) for installation on `profile`.
    static func inspect(
        _ bundleURL: URL, for profile: VirtualDeviceProfile, chipID: Int, expectedIdentifier: String?,
        fileSystem: any FileSystem
    ) throws -> AppBundleInfo {
        let plistURL = bundleURL.appendingPathComponent("Info.plist")
        guard let data = fileSystem.contents(atPath: plistURL.path),
            let info = try? PropertyList.dictionary(from: data)
        else {
            throw InstallError(
                "PackageInspectionFailed",
                "Failed to load Info.plist from bundle at path \(bundleURL.lastPathComponent)",
                detail: 0xE800_8015)
        }
        guard let identifier = info["CFBundleIdentifier"] as? String, !identifier.isEmpty else {
            throw InstallError(
                "MissingBundleIdentifier",
                "Bundle at path \(bundleURL.lastPathComponent) has no CFBundleIdentifier")
        }
        // The identifier names the app's folders on the device (and here on the host): letters,
        // digits, '-', '_' and '.', never a path.
        guard Self.isValidIdentifier(identifier) else {
            throw InstallError(
                "PackageInspectionFailed",
                "Bundle at path \(bundleURL.lastPathComponent) has an invalid CFBundleIdentifier "
                    + "(only letters, digits, '-', '_' and '.' are allowed)",
                detail: 0xE800_8015)
        }
        if let expectedIdentifier, expectedIdentifier != identifier {
            throw InstallError(
                "PackageInspectionFailed",
                "Bundle identifier mismatch: the install options name \(expectedIdentifier) but the bundle is \(identifier)",
                detail: 0xE800_8015)
        }
        guard let executable = info["CFBundleExecutable"] as? String, !executable.isEmpty else {
            throw InstallError("MissingBundleExecutable", "Bundle \(identifier) has no CFBundleExecutable")
        }
        guard let version = info["CFBundleVersion"] as? String, !version.isEmpty else {
            throw InstallError("MissingBundleVersion", "Bundle \(identifier) has no CFBundleVersion")
        }
        if let minimum = info["MinimumOSVersion"] as? String,
            minimum.compare(profile.productVersion, options: .numeric) == .orderedDescending
        {
            throw InstallError(
                "DeviceOSVersionTooLow",
                "The system version is lower than the minimum OS version specified for bundle \(identifier). "
                    + "Install requires \(minimum), device has \(profile.productVersion)")
        }
        if let families = info["UIDeviceFamily"] as? [Int], !families.isEmpty {
            // iPhone apps run on iPads in compatibility mode; iPad-only apps do not run on iPhones.
            let family = profile.deviceClass == "iPad" ? 2 : 1
            if !families.contains(family) && !(family == 2 && families.contains(1)) {
                throw InstallError(
                    "DeviceFamilyNotSupported", "This application does not support this device's family")
            }
        }
        let executableURL = bundleURL.appendingPathComponent(executable)
        guard fileSystem.fileExists(atPath: executableURL.path) else {
            throw InstallError(
                "MissingBundleExecutable",
                "Bundle \(identifier) does not contain its executable \(executable)")
        }
        guard let architectures = MachOInspector.architectures(of: executableURL) else {
            throw InstallError(
                "ApplicationVerificationFailed",
                "Failed to verify code signature of \(executableURL.lastPathComponent) : 0xe8008001 "
                    + "(The executable is not a Mach-O file.)", detail: 0xE800_801C)
        }
        let runnable = MachOInspector.runnable(on: profile, chipID: chipID)
        if !architectures.contains(where: runnable.contains) {
            let bits = architectures.allSatisfy { $0.hasPrefix("arm64") || $0 == "x86_64" } ? 64 : 32
            throw InstallError(
                "IncorrectArchitecture",
                "Failed to find matching arch for \(bits)-bit Mach-O input file "
                    + "/private/var/installd/Library/Caches/com.apple.mobile.installd.staging/"
                    + "\(bundleURL.lastPathComponent)/\(executable)")
        }
        // installd installs no executable without a code signature (a development, ad hoc or App Store
        // one; a jailbroken iPad's ldid adds one on the device itself).
        guard MachOInspector.isSigned(executableURL) else {
            throw InstallError(
                "ApplicationVerificationFailed",
                "Failed to verify code signature of /private/var/installd/Library/Caches/"
                    + "com.apple.mobile.installd.staging/\(bundleURL.lastPathComponent)/\(executable) : "
                    + "0xe800801c (No code signature found.)", detail: 0xE800_801C)
        }
        let name =
            info["CFBundleDisplayName"] as? String ?? info["CFBundleName"] as? String ?? executable
        return AppBundleInfo(
            bundleURL: bundleURL, bundleIdentifier: identifier, executable: executable,
            bundleVersion: version,
            shortVersion: info["CFBundleShortVersionString"] as? String, displayName: name,
            architectures: architectures, diskUsage: Self.size(of: bundleURL, in: fileSystem))
    }

    /// What installd reports as the bundle's StaticDiskUsage: the sizes of everything in it (folders
    /// and links as the host stores them, links not followed).
    private static func size(of url: URL, in fileSystem: any FileSystem) -> Int {
        let subpaths = (try? fileSystem.subpathsOfDirectory(atPath: url.path)) ?? []
        return subpaths.reduce(0) { total, subpath in
            let attributes = try? fileSystem.attributesOfItem(
                atPath: url.appendingPathComponent(subpath).path)
            return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }
}
