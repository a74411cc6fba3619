import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import SSHTestPeers
import SSHTransport
import TestSupport

/// A scratch "device": an Applications directory and recording fakes of uicache/launch/kill/screenshot
/// (copied from scripts/ssh/device), owned by the test login user.
struct DeviceRoot {
    let url: URL
    var applications: String { url.appendingPathComponent("Applications").path }
    var screen: Data

    init() throws {
        url = try TestEnvironment.makeDirectory("hadeploy-device")
        for directory in ["Applications", "mobile", "tmp"] {
            try FileManager.default.createDirectory(
                at: url.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        let bin = url.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        for tool in ["uicache", "launch", "kill", "screenshot"] {
            try TestEnvironment.installExecutable(
                from: TestEnvironment.scriptsDirectory.appendingPathComponent("device/\(tool)"),
                to: bin.appendingPathComponent(tool))
        }
        screen =
            Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data((0..<3000).map { UInt8($0 % 251) })
        try screen.write(to: url.appendingPathComponent("screen.png"))
        try TestEnvironment.giveToTestUser(url)
    }

    var commands: JailbreakCommands {
        let bin = url.appendingPathComponent("bin").path
        return JailbreakCommands(
            refreshIcons: "\(bin)/uicache", launch: "\(bin)/launch {bundle_id}",
            kill: "\(bin)/kill {executable}",
            screenshot: "\(bin)/screenshot {output}")
    }

    func deployConfig(_ connection: SSHConnectionConfig, transfer: TransferMethod = .auto)
        -> JailbreakDeployConfig
    {
        JailbreakDeployConfig(
            connection: connection, installDirectory: applications,
            owner: "\(TestEnvironment.user):\(TestEnvironment.user)", transfer: transfer, commands: commands,
            mobileDirectory: url.appendingPathComponent("mobile").path,
            preferencesOwner: "\(TestEnvironment.user):\(TestEnvironment.user)",
            temporaryDirectory: url.appendingPathComponent("tmp").path)
    }

    func read(_ name: String) -> String {
        (try? String(contentsOf: url.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    func remove() { TestEnvironment.remove(url) }
}

/// A small local app bundle.
struct TestApp {
    let url: URL
    let directory: URL

    /// `entitlements`: the executable is a Mach-O signed with them (a development build's, naming
    /// io.hadeploy.test, by default); nil: an unsigned executable, as a build without signing gives.
    init(
        name: String = "HADash", version: String = "1", bigFileBytes: Int = 0,
        entitlements: Data? = DemoAppBuilder.entitlements(bundleID: "io.hadeploy.test")
    ) throws {
        directory = try TestEnvironment.makeDirectory("hadeploy-app")
        url = directory.appendingPathComponent("\(name).app")
        let manager = FileManager.default
        try manager.createDirectory(
            at: url.appendingPathComponent("Base.lproj/Main.storyboardc"), withIntermediateDirectories: true)
        let plist: [String: Any] = [
            "CFBundleExecutable": name, "CFBundleIdentifier": "io.hadeploy.test", "CFBundleVersion": version,
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
            .write(to: url.appendingPathComponent("Info.plist"))
        let binary = url.appendingPathComponent(name)
        var executable = MachOWriter.executable(archs: [.armv7, .arm64], entitlements: entitlements)
        executable.append(Data("\n\(name) \(version)\n".utf8))
        try executable.write(to: binary)
        try manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary.path)
        try Data("storyboard \(version)".utf8).write(
            to: url.appendingPathComponent("Base.lproj/Main.storyboardc/Info.plist"))
        try Data("it's a file with a 'quote' and spaces".utf8).write(
            to: url.appendingPathComponent("odd name's.txt"))
        if bigFileBytes > 0 {
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<(bigFileBytes / 8)).map { _ in generator.next() as UInt64 }
            try bytes.withUnsafeBytes { Data($0) }.write(to: url.appendingPathComponent("big.bin"))
        }
    }

    func remove() { TestEnvironment.remove(directory) }

    /// Relative path → (contents, executable?) of every file.
    static func snapshot(_ root: URL) -> [String: String] {
        var result: [String: String] = [:]
        let manager = FileManager.default
        for path in (try? manager.subpathsOfDirectory(atPath: root.path)) ?? [] {
            let full = root.appendingPathComponent(path).path
            var isDirectory: ObjCBool = false
            _ = manager.fileExists(atPath: full, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                result[path] = "dir"
            } else {
                let data = manager.contents(atPath: full) ?? Data()
                let mode = (try? manager.attributesOfItem(atPath: full)[.posixPermissions] as? Int) ?? 0
                result[path] = "\(data.count):\(data.hashValue):\(mode & 0o100 != 0 ? "x" : "-")"
            }
        }
        return result
    }
}

extension JailbreakDeployer {
    /// A deployer with this machine's files and clock: these tests send real bundles to a real sshd.
    init(live config: JailbreakDeployConfig) {
        self.init(config: config, fileSystem: TestHost.fileSystem, clock: TestHost.clock)
    }
}
