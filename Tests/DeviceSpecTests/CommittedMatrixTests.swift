import DeviceSpec
import Foundation
import HADeployDrivers
import TestSupport
import Testing

/// The devices.yaml committed at the repository root describes the real matrix.
@Suite struct CommittedMatrixTests {
    static let root = repositoryRoot

    static func load() throws -> DeviceMatrix {
        try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
    }

    @Test func itLoadsWithTheWholeMatrix() throws {
        let matrix = try Self.load()
        #expect(
            matrix.devices.map(\.id) == [
                "ipad2", "ipad2-usb", "ipad3", "ipad4", "ipad4-usb", "mini4", "mini5", "iphone", "ipadpro",
                "sim", "sim-iphone", "sim-ios93", "sim-ios103", "mac",
            ])
        #expect(matrix.flavours.map(\.name) == ["legacy", "modern", "simulator", "rosettasim", "mac"])
        #expect(matrix.groups["ipads"] == ["ipad2", "ipad3", "ipad4", "mini4", "mini5", "ipadpro"])
    }

    /// The app's script (1.3): `all` is the physical fleet (`iphone mini5 mini4 ipad4 ipadpro mac`),
    /// no simulators nor the iPads 2 and 3, and every physical iOS device installs the one universal
    /// build (armv7 + arm64, iOS 9.0).
    @Test func allIsTheAppsFleetOnOneUniversalBuild() throws {
        let matrix = try Self.load()
        #expect(matrix.groups["all"] == ["iphone", "mini5", "mini4", "ipad4", "ipadpro", "mac"])
        #expect(matrix.groups["jailbroken"] == ["ipad2", "ipad3", "ipad4"])
        let physical = matrix.devices.filter { $0.kind == .device && $0.transport != "mac" }
        #expect(physical.allSatisfy { $0.flavour == "legacy" }, "\(physical.map { ($0.id, $0.flavour) })")
        let ipadpro = try #require(matrix.device(id: "ipadpro"))
        #expect(
            (ipadpro.transport, ipadpro.model, ipadpro.aliases) == ("devicectl", "iPad Pro", ["ipad-pro"]))
        #expect(
            ipadpro.udid?.raw == "${IPAD_PRO_DEVICECTL_ID:-}",
            "unset: the one physical iPad Pro devicectl lists")
    }

    @Test func flavoursMatchTheBuildMachines() throws {
        let matrix = try Self.load()
        let legacy = try #require(matrix.flavour(named: "legacy"))
        #expect(legacy.archs == [.armv7, .arm64])
        #expect(legacy.deploymentTarget == "9.0")
        // The armv7 slice is the app's own recipe (Xcode 26 clang against Xcode 13's SDK stubs).
        #expect(legacy.script == "scripts/build.sh device")
        #expect(legacy.xcode?.display([:]) == "/Applications/Xcode.app")
        #expect(legacy.xcode?.display(["XCODE_MODERN": "/opt/Xcode26.app"]) == "/opt/Xcode26.app")
        let modern = try #require(matrix.flavour(named: "modern"))
        #expect(modern.archs == [.arm64])
        #expect(modern.deploymentTarget == "15.0")
        let rosetta = try #require(matrix.flavour(named: "rosettasim"))
        #expect(rosetta.archs == [.x86_64])
        #expect(rosetta.sdk == "iphonesimulator")
        #expect(rosetta.settings == ["MERGED_BINARY_TYPE": "none", "ENABLE_DEBUG_DYLIB": "NO"])
        #expect(rosetta.xcode?.display([:]) == "/Applications/Xcode.app", "Xcode 26, as the app builds it")
        #expect(matrix.flavour(named: "simulator")?.sdk == "iphonesimulator")
        // The project has only Debug and Release.
        #expect(matrix.flavours.map(\.configuration) == ["Debug", "Release", "Debug", "Debug", "Debug"])
        // The app's `scripts/build.sh mac`: the Mac Catalyst variant, Debug, arm64, Xcode 26.
        let mac = try #require(matrix.flavour(named: "mac"))
        #expect((mac.sdk, mac.isMacCatalyst, mac.archs, mac.script) == ("maccatalyst", true, [.arm64], nil))
        #expect(mac.xcode?.display([:]) == "/Applications/Xcode.app")
    }

    @Test func devicesMatchTheRealHardware() throws {
        let matrix = try Self.load()
        let ipad2 = try #require(matrix.device(id: "ipad2"))
        #expect(ipad2.name == "iPad 2")
        #expect(ipad2.arch == .armv7)
        #expect(ipad2.iosVersion == "9.3.5")
        #expect(ipad2.flavour == "legacy")
        #expect(ipad2.transport == "ssh")
        #expect(ipad2.fallbackTransport == "usb")
        #expect(ipad2.kind == .device)
        #expect(ipad2.udid?.raw == "${IPAD2_UDID}")
        #expect(ipad2.host?.references == ["IPAD2_IP"])
        #expect(ipad2.ssh?.legacyAlgorithms == true)
        #expect(ipad2.ssh?.passwordEnv == "IPAD2_SSH_PASS")
        #expect(ipad2.dashboard == "dashboard-office")
        let usb = try #require(matrix.device(id: "ipad2-usb"))
        #expect((usb.transport, usb.udid?.raw) == ("usb", "${IPAD2_UDID}"))
        #expect(usb.usbHost?.display(["UNRAID_HOST": "nas"]) == "ssh://root@nas")
        #expect(ipad2.verificationTimeout == 90)
        #expect(ipad2.kiosk == true)

        let mini4 = try #require(matrix.device(id: "mini4"))
        #expect((mini4.arch, mini4.flavour, mini4.transport, mini4.iosMajor) == (.arm64, "legacy", "usb", 15))
        #expect(mini4.verificationTimeout == 30, "from defaults")
        #expect(mini4.network, "the old script's `ideviceinstaller -n`: a Wi-Fi device")
        #expect(mini4.launch, "launched, with only the keys configured (the old script did not launch it)")
        let mini5 = try #require(matrix.device(id: "mini5"))
        #expect((mini5.transport, mini5.iosMajor) == ("devicectl", 26))
        #expect(mini5.udid?.references == ["IPAD_MINI5_DEVICECTL_ID"])
        #expect(mini5.dashboard == "dashboard-landing")
        #expect(mini4.udid?.references == ["IPAD_MINI4_UDID"])
        let mac = try #require(matrix.device(id: "mac"))
        #expect(
            (mac.kind, mac.transport, mac.arch, mac.flavour, mac.iosVersion) == (
                .device, "mac", .arm64, "mac", ""
            ))
        let iphone = try #require(matrix.device(id: "iphone"))
        #expect((iphone.transport, iphone.iosMajor, iphone.kiosk) == ("devicectl", 18, nil))

        for id in ["sim", "sim-iphone"] {
            let sim = try #require(matrix.device(id: id))
            #expect(
                (sim.kind, sim.transport, sim.arch, sim.flavour) == (
                    .simulator, "simctl", .arm64, "simulator"
                )
            )
        }
        for id in ["sim-ios93", "sim-ios103"] {
            let sim = try #require(matrix.device(id: id))
            #expect(
                (sim.kind, sim.transport, sim.arch, sim.flavour) == (
                    .simulator, "rosettasim", .x86_64, "rosettasim"
                ))
        }
        #expect(matrix.device(id: "sim-ios93")?.iosVersion == "9.3")
        #expect(matrix.device(id: "sim-ios103")?.iosVersion == "10.3")
        #expect(matrix.device(id: "sim")?.simulatorDeviceType == "${SIM_IPAD_NAME:-iPad (10th generation)}")
    }
}
