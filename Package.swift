// swift-tools-version:6.2
import PackageDescription

// Swift 6 language mode (complete strict concurrency) for every target.
let strict: [SwiftSetting] = []

let package = Package(
    name: "hadeploy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hadeploy", targets: ["hadeploy"]),
        .library(name: "HADeployKit", targets: ["HADeployKit"]),
        .library(name: "DeviceSpec", targets: ["DeviceSpec"]),
        .library(name: "HomeAssistant", targets: ["HomeAssistant"]),
        .library(name: "VirtualDevice", targets: ["VirtualDevice"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
    ],
    targets: [
        // MARK: executable + CLI
        .executableTarget(
            name: "hadeploy",
            dependencies: ["HADeployCLI", "HADeployCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(
            name: "HADeployCLI",
            dependencies: [
                "HADeployKit", "HADeployStatus", "HADeployReporting", "HADeployCore", "DeviceSpec",
                "Versioning",
                "Templating", "DeployModel", "HADeployAdopt", "HADeployVirtual",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // MARK: the Kit: plans as values, executors
        .target(
            name: "HADeployKit",
            dependencies: [
                "DeployModel", "HADeployDrivers", "HADeployBuild", "HADeployReporting",
                "HADeployCore", "DeviceSpec", "Versioning", "Templating",
                "MobileDevice", "SSHTransport", "HomeAssistant", "HostCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // What the devices are and what they run, asked without changing them: `hadeploy status`
        // (its plan and executor) and `hadeploy devices` (the inventory and the build host's Xcodes).
        .target(
            name: "HADeployStatus",
            dependencies: [
                "HADeployKit", "DeployModel", "HADeployDrivers", "HADeployBuild", "HADeployReporting",
                "HADeployCore", "DeviceSpec", "Versioning", "MobileDevice", "SSHTransport", "MQTT",
                "HostCrypto",
            ],
            swiftSettings: strict
        ),
        // The plan and the driver contract: values only, no I/O.
        .target(
            name: "DeployModel",
            dependencies: ["HADeployCore", "DeviceSpec", "Versioning"],
            swiftSettings: strict
        ),
        // How each tool family installs, launches and inspects the app (devicectl, simctl, USB,
        // pymobiledevice3, the Mac, jailbroken devices over SSH).
        .target(
            name: "HADeployDrivers",
            dependencies: [
                "DeployModel", "HADeployCore", "DeviceSpec", "MobileDevice", "SSHTransport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Builds: the xcodebuild command line, local and remote (SSH) build machines, packaging.
        .target(
            name: "HADeployBuild",
            dependencies: [
                "DeployModel", "HADeployDrivers", "HADeployCore", "DeviceSpec", "Versioning", "MobileDevice",
                "SSHTransport", "HostCrypto",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            swiftSettings: strict
        ),
        // What a run looks like to people and CI: live terminal, JSON lines, HTML, JUnit.
        .target(
            name: "HADeployReporting",
            dependencies: ["DeployModel", "HADeployCore", "Templating", "ImageCodec"],
            swiftSettings: strict
        ),
        // `hadeploy init`: turning an existing Xcode project into a devices.yaml.
        .target(
            name: "HADeployAdopt",
            dependencies: [
                "DeployModel", "HADeployBuild", "HADeployDrivers", "HADeployCore", "DeviceSpec", "Templating",
                "MobileDevice",
            ],
            swiftSettings: strict
        ),
        // Starts the virtual twins for a run and hands the Kit their address (the emulator is never
        // a dependency of the Kit).
        .target(
            name: "HADeployVirtual",
            dependencies: [
                "HADeployKit", "DeployModel", "HADeployCore", "DeviceSpec", "VirtualDevice",
                "HADeployDrivers",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // MARK: pure middle
        .target(
            name: "HADeployCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "DeviceSpec",
            dependencies: ["HADeployCore", .product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),
        .target(
            name: "Versioning",
            dependencies: ["HADeployCore"],
            swiftSettings: strict
        ),
        .target(
            name: "Templating",
            dependencies: [
                "HADeployCore",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),

        // MARK: C libraries (only the wrapper targets import them)
        .systemLibrary(
            name: "CIMobileDevice",
            pkgConfig: "libimobiledevice-1.0",
            providers: [.apt(["libimobiledevice-dev"]), .brew(["libimobiledevice"])]
        ),
        .systemLibrary(
            name: "CPlist",
            pkgConfig: "libplist-2.0",
            providers: [.apt(["libplist-dev"]), .brew(["libplist"])]
        ),
        .systemLibrary(
            name: "CUsbmuxd",
            pkgConfig: "libusbmuxd-2.0",
            providers: [.apt(["libusbmuxd-dev"]), .brew(["libusbmuxd"])]
        ),
        .systemLibrary(
            name: "CPNG",
            pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"]), .brew(["libpng"])]
        ),
        .systemLibrary(
            name: "CTIFF",
            pkgConfig: "libtiff-4",
            providers: [.apt(["libtiff-dev"]), .brew(["libtiff"])]
        ),
        .systemLibrary(
            name: "CLibSSH",
            pkgConfig: "libssh",
            providers: [.apt(["libssh-dev"]), .brew(["libssh"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),

        // MARK: edges
        .target(
            name: "MulticastDNS",
            dependencies: ["HADeployCore"],
            swiftSettings: strict
        ),
        .target(
            name: "MobileDevice",
            dependencies: [
                "HADeployCore", "CIMobileDevice", "CPlist", "CUsbmuxd", "ImageCodec", "HostCrypto",
                "MulticastDNS",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SSHTransport",
            dependencies: [
                "HADeployCore", "CLibSSH", "HostCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "HomeAssistant",
            dependencies: [
                "HADeployCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // A small MQTT 3.1.1 publisher (TCP or TLS): how `hadeploy status --publish` reaches Home
        // Assistant's MQTT discovery.
        .target(
            name: "MQTT",
            dependencies: [
                "HADeployCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // OpenSSL's libcrypto: SHA-256 of artifacts, HMAC-SHA1 of known_hosts, the twins' RSA keys
        // and pairing certificates.
        .target(
            name: "HostCrypto",
            dependencies: ["COpenSSL"],
            swiftSettings: strict
        ),
        .target(
            name: "ImageCodec",
            dependencies: ["CPNG", "CTIFF"],
            swiftSettings: strict
        ),
        .target(
            name: "VirtualDevice",
            dependencies: [
                "HomeAssistant", "ImageCodec", "HADeployCore", "MulticastDNS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "HostCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // MARK: benchmarks (opt-in measurements, not tests: BENCHMARKS.md)
        .executableTarget(
            name: "hadeploy-bench",
            dependencies: [
                "HomeAssistant", "MobileDevice", "VirtualDevice", "SSHTransport", "HADeployDrivers",
                "HADeployCore", "DeployModel", "ImageCodec", "HADeployBuild", "DeviceSpec",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            path: "Benchmarks",
            swiftSettings: strict
        ),

        // MARK: tests
        // One racing process for the device-lock race test (a test helper, not shipped).
        .executableTarget(
            name: "hadeploy-lock-racer", dependencies: ["HADeployKit"], path: "Tests/LockRacer",
            swiftSettings: strict),
        .target(
            name: "TestSupport", dependencies: ["HADeployCore", "DeployModel", "HADeployBuild"],
            path: "Tests/TestSupport",
            swiftSettings: strict),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "TestSupport", "VirtualDevice", "HADeployKit", "HADeployVirtual", "DeviceSpec",
                "HADeployCore", "MobileDevice", "DeployModel", "HADeployBuild", "HADeployDrivers",
                "HomeAssistant", "HADeployStatus",
                "ImageCodec",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .testTarget(name: "ImageCodecTests", dependencies: ["ImageCodec"], swiftSettings: strict),
        .testTarget(name: "HostCryptoTests", dependencies: ["HostCrypto"], swiftSettings: strict),
        .testTarget(
            name: "HADeployCoreTests",
            dependencies: ["HADeployCore", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .testTarget(
            name: "DeviceSpecTests",
            dependencies: ["DeviceSpec", "HADeployCore", "HADeployDrivers", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "VersioningTests", dependencies: ["Versioning", "HADeployCore", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "TemplatingTests",
            dependencies: [
                "Templating", "HADeployCore", "TestSupport", .product(name: "Yams", package: "Yams"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "HADeployKitTests",
            dependencies: [
                "HADeployKit", "HADeployStatus", "DeployModel", "HADeployDrivers", "HADeployBuild",
                "HADeployReporting", "HADeployAdopt", "DeviceSpec", "HADeployCore", "Versioning",
                "TestSupport", "SSHTransport",
                "HomeAssistant", "ImageCodec", "HostCrypto", "MQTT",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "HADeployCore", "TestSupport", "HADeployCLI", .product(name: "Yams", package: "Yams"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "MobileDeviceTests",
            dependencies: [
                "MobileDevice", "CIMobileDevice", "VirtualDevice", "HADeployCore", "ImageCodec",
                "TestSupport", "MulticastDNS",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The real SSH servers (OpenSSH, dropbear) the SSH suites log in to, started per test.
        .target(
            name: "SSHTestPeers", dependencies: ["SSHTransport", "HADeployCore", "TestSupport"],
            path: "Tests/SSHTestPeers", swiftSettings: strict),
        // libssh's side alone (SFTP, host keys, output), without the Kit: the SSH suite that also runs
        // against the second generation of the C libraries (scripts/brew-gen-test.sh).
        .testTarget(
            name: "SSHSessionTests",
            dependencies: ["SSHTransport", "SSHTestPeers", "HADeployCore", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "SSHTransportTests",
            dependencies: [
                "SSHTransport", "SSHTestPeers", "HADeployCore", "VirtualDevice", "HADeployKit",
                "HADeployDrivers",
                "DeployModel",
                "HADeployBuild", "HADeployReporting", "DeviceSpec", "TestSupport", "HomeAssistant",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "MQTTTests",
            dependencies: ["MQTT", "HADeployCore", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "HomeAssistantTests",
            dependencies: ["HomeAssistant", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .testTarget(
            name: "PyMobileDevice3FidelityTests",
            dependencies: [
                "VirtualDevice", "TestSupport", "HADeployCore",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VirtualDeviceTests",
            dependencies: [
                "VirtualDevice", "ImageCodec", "TestSupport", "HomeAssistant", "HADeployCore", "HostCrypto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The suites are compiled without optimization even in `make test`'s release build (`-c release
// -enable-testing`, the objects that ship): optimizing test code made that build slower and tests
// nothing more. The shipped targets keep -O.
for target in package.targets
where target.type == .test || ["TestSupport", "SSHTestPeers"].contains(target.name) {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [.unsafeFlags(["-Onone"], .when(configuration: .release))]
}

// `make test` builds the C-facing code against the second generation of the C libraries
// (scripts/brew-gen-test.sh, Homebrew's versions from compat/brew-gen) with only what that needs:
// HADEPLOY_PACKAGE_SCOPE=c-facing keeps MobileDeviceTests and SSHSessionTests with the targets they
// depend on (no CLI, Kit or other suites), so that second build does not compile the whole package.
if Context.environment["HADEPLOY_PACKAGE_SCOPE"] == "c-facing" {
    let byName = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
    var kept: Set<String> = []
    var pending = ["MobileDeviceTests", "SSHSessionTests"]
    var packages: Set<String> = []
    while let name = pending.popLast() {
        guard kept.insert(name).inserted, let target = byName[name] else { continue }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): pending.append(name)
            case .productItem(_, let package, _, _): if let package { packages.insert(package.lowercased()) }
            @unknown default: break
            }
        }
    }
    package.targets = package.targets.filter { kept.contains($0.name) }
    package.products = []
    package.dependencies = package.dependencies.filter { dependency in
        guard case .sourceControl(_, let location, _) = dependency.kind else { return true }
        let name = location.split(separator: "/").last.map(String.init) ?? location
        return packages.contains(
            (name.hasSuffix(".git") ? String(name.dropLast(4)) : name).lowercased())
    }
}
