import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HostCrypto
import MobileDevice

/// Makes a small stand-in app bundle per flavour for `--virtual` runs on hosts without Xcode.
///
/// The bundle is real in shape (Info.plist, versions from git, an executable whose Mach-O header
/// carries exactly the flavour's architectures, so arch checks behave as with a real build) but its
/// code is not: it only runs on virtual devices, and reports say it is a demo bundle.
public struct DemoAppBuilder: Sendable {
    public var bundleID: String
    public var executableName: String
    public var displayName: String

    /// The demo app's bundle id when `.env` sets no BUNDLE_ID (what `--virtual` installs).
    public static let defaultBundleID = "com.example.hadashboard"

    public init(
        bundleID: String = DemoAppBuilder.defaultBundleID, executableName: String = "HADashboard",
        displayName: String = "HA Dashboard"
    ) {
        self.bundleID = bundleID
        self.executableName = executableName
        self.displayName = displayName
    }

    /// The team id the demo bundles are "signed" with.
    public static let demoTeamID = "HADEPLOYDM"

    /// A development build's entitlements for `bundleID` (application-identifier, keychain group,
    /// get-task-allow), as an XML plist.
    public static func entitlements(bundleID: String, team: String = demoTeamID) -> Data {
        let values: [String: Any] = [
            "application-identifier": "\(team).\(bundleID)",
            "com.apple.developer.team-identifier": team,
            "keychain-access-groups": ["\(team).\(bundleID)"],
            "get-task-allow": true,
        ]
        return (try? PropertyListValue.encode(values, .xml)) ?? Data()
    }

    /// The development profile a device build carries, as Xcode's automatic signing makes one: the
    /// demo team's app id for `bundleID` (`*`: every app of the team), the `devices` it runs on
    /// (hardware UDIDs; nil: an in-house profile, every device), valid for a year from `now`. The same
    /// bundle id and devices give the same profile UUID (a rebuild replaces the profile a device holds,
    /// as Xcode's do).
    public static func developmentProfile(bundleID: String, devices: [String]?, now: Date) throws -> Data {
        let devices = devices.map { Array(Set($0)).sorted() }
        let key = ([bundleID] + (devices ?? ["*"])).joined(separator: "\n")
        let digest = Array(SHA256Hasher.hex(of: Data(key.utf8)))
        let uuid = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(digest[$0]).uppercased() }
            .joined(separator: "-")
        let profile = ProvisioningProfile(
            name: devices == nil ? "hadeploy demo (in-house)" : "iOS Team Provisioning Profile: \(bundleID)",
            uuid: uuid, teamIdentifiers: [demoTeamID], expirationDate: now.addingTimeInterval(365 * 86_400),
            provisionedDevices: devices, provisionsAllDevices: devices == nil,
            applicationIdentifier: "\(demoTeamID).\(bundleID)")
        return try CMSEnvelope.signedByThrowawayIdentity(profile.plist(creationDate: now), now: now)
    }

    /// The flavour's bundle in `directory`/<flavour>/; a device build (iphoneos) carries a development
    /// profile listing `devices`, as a real one does (a device refuses a build whose profile does not
    /// list it).
    public func build(
        flavour: Flavour, marketingVersion: String, buildNumber: Int, into directory: URL,
        devices: [String] = [], now: Date, in fileSystem: any FileSystem
    ) throws -> Artifact {
        let app = directory.appendingPathComponent(flavour.name).appendingPathComponent(
            "\(executableName).app")
        try? fileSystem.removeItem(at: app)
        try fileSystem.createDirectory(at: app, withIntermediateDirectories: true)
        let info: [String: Any] = [
            "CFBundleIdentifier": bundleID,
            "CFBundleExecutable": executableName,
            "CFBundleName": executableName,
            "CFBundleDisplayName": displayName,
            "CFBundleShortVersionString": marketingVersion,
            "CFBundleVersion": String(buildNumber),
            "CFBundlePackageType": "APPL",
            "CFBundleSupportedPlatforms": [flavour.sdk == "iphonesimulator" ? "iPhoneSimulator" : "iPhoneOS"],
            "MinimumOSVersion": flavour.deploymentTarget,
            "UIDeviceFamily": [1, 2],
            "HADeployDemoBundle": true,
        ]
        let plist = try PropertyListValue.encode(info, .xml)
        try fileSystem.write(plist, to: app.appendingPathComponent("Info.plist"), options: [])
        // Signed as a development build is: its entitlements name the app (the keychain of the app on
        // a jailbroken iPad works only when ldid applies them).
        try fileSystem.write(
            MachOWriter.executable(archs: flavour.archs, entitlements: Self.entitlements(bundleID: bundleID)),
            to: app.appendingPathComponent(executableName), options: [])
        try fileSystem.write(Data("APPL????".utf8), to: app.appendingPathComponent("PkgInfo"), options: [])
        if flavour.sdk == "iphoneos" {
            try fileSystem.write(
                Self.developmentProfile(bundleID: bundleID, devices: devices, now: now),
                to: app.appendingPathComponent("embedded.mobileprovision"), options: [])
        }
        return Artifact(
            path: app.path, bundleID: bundleID, executable: executableName,
            marketingVersion: marketingVersion,
            buildNumber: String(buildNumber), flavour: flavour.name, archs: flavour.archs.map(\.rawValue))
    }
}

/// Minimal Mach-O images: a header per architecture, fat when there are several.
public enum MachOWriter {
    static func cpu(_ arch: Arch) -> (type: UInt32, subtype: UInt32, is64: Bool) {
        switch arch {
        case .armv7: return (12, 9, false)  // CPU_TYPE_ARM, CPU_SUBTYPE_ARM_V7
        case .arm64: return (0x0100_000C, 0, true)  // CPU_TYPE_ARM64
        case .arm64e: return (0x0100_000C, 2, true)
        case .x86_64: return (0x0100_0007, 3, true)  // CPU_TYPE_X86_64, CPU_SUBTYPE_X86_64_ALL
        }
    }

    /// A thin image: mach_header(_64), then padding; with `entitlements`, one `LC_CODE_SIGNATURE`
    /// whose SuperBlob (after the first 4 KiB) holds them, as a signed build's executable does.
    static func thin(_ arch: Arch, entitlements: Data? = nil) -> Data {
        let (type, subtype, is64) = cpu(arch)
        var data = Data()
        func le(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let signature = entitlements.map { MachOEntitlements.superBlob(entitlements: $0) }
        le(is64 ? 0xFEED_FACF : 0xFEED_FACE)
        le(type)
        le(subtype)
        le(2)  // MH_EXECUTE
        le(signature == nil ? 0 : 1)  // ncmds
        le(signature == nil ? 0 : 16)  // sizeofcmds
        le(0x0020_0085)  // MH_NOUNDEFS | MH_DYLDLINK | MH_TWOLEVEL | MH_PIE
        if is64 { le(0) }
        if let signature {
            le(MachOEntitlements.codeSignatureCommand)
            le(16)
            le(4096)  // dataoff
            le(UInt32(signature.count))  // datasize
        }
        data.append(Data(repeating: 0, count: 4096 - data.count))
        if let signature { data.append(signature) }
        return data
    }

    /// The demo's executable: `archs`' slices, each signed with `entitlements` when given.
    public static func executable(archs: [Arch], entitlements: Data? = nil) -> Data {
        guard archs.count > 1 else { return thin(archs.first ?? .arm64, entitlements: entitlements) }
        let align: UInt32 = 14  // 16 KiB, as ld aligns ARM slices
        var header = Data()
        func be(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { header.append(contentsOf: $0) } }
        be(0xCAFE_BABE)
        be(UInt32(archs.count))
        var offset = UInt32(1 << align)
        var slices: [Data] = []
        for arch in archs {
            let slice = thin(arch, entitlements: entitlements)
            let (type, subtype, _) = cpu(arch)
            be(type)
            be(subtype)
            be(offset)
            be(UInt32(slice.count))
            be(align)
            slices.append(slice)
            offset += UInt32(1 << align)
        }
        var data = header
        for slice in slices {
            data.append(
                Data(repeating: 0, count: Int(UInt32(1 << align)) - (data.count % Int(UInt32(1 << align)))))
            data.append(slice)
        }
        return data
    }
}
