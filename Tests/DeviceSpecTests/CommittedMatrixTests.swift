import DeviceSpec
import Foundation
import Testing

/// The devices.yaml committed at the repository root describes the real matrix.
@Suite struct CommittedMatrixTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func load() throws -> DeviceMatrix {
        try SpecLoader().load(
            contentsOf: root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
    }

    @Test func itLoadsWithTheWholeMatrix() throws {
        let matrix = try Self.load()
        #expect(
            matrix.devices.map(\.id) == [
                "ipad2", "mini4", "mini5", "iphone", "sim-ipad", "sim-iphone", "sim-ipadpro-ios9",
                "sim-ipad5-ios10",
            ])
        #expect(matrix.flavours.map(\.name) == ["legacy", "modern", "simulator", "rosettasim"])
        #expect(matrix.groups["ipads"] == ["ipad2", "mini4", "mini5"])
    }

    @Test func flavoursMatchTheBuildMachines() throws {
        let matrix = try Self.load()
        let legacy = try #require(matrix.flavour(named: "legacy"))
        #expect(legacy.archs == [.armv7, .arm64])
        #expect(legacy.deploymentTarget == "9.0")
        #expect(legacy.xcode?.display([:]) == "/Applications/Xcode-13.2.1.app")
        #expect(legacy.xcode?.display(["XCODE_LEGACY": "/opt/Xcode13"]) == "/opt/Xcode13")
        let modern = try #require(matrix.flavour(named: "modern"))
        #expect(modern.archs == [.arm64])
        #expect(modern.deploymentTarget == "15.0")
        let rosetta = try #require(matrix.flavour(named: "rosettasim"))
        #expect(rosetta.archs == [.x86_64])
        #expect(rosetta.sdk == "iphonesimulator")
        #expect(rosetta.settings == ["MERGED_BINARY_TYPE": "none"])
        #expect(matrix.flavour(named: "simulator")?.sdk == "iphonesimulator")
    }

    @Test func devicesMatchTheRealHardware() throws {
        let matrix = try Self.load()
        let ipad2 = try #require(matrix.device(id: "ipad2"))
        #expect(ipad2.name == "iPad 2")
        #expect(ipad2.arch == .armv7)
        #expect(ipad2.iosVersion == "9.3.5")
        #expect(ipad2.flavour == "legacy")
        #expect(ipad2.transport == .ssh)
        #expect(ipad2.fallbackTransport == .usb)
        #expect(ipad2.kind == .device)
        #expect(ipad2.udid?.raw == "${IPAD2_UDID}")
        #expect(ipad2.host?.references == ["IPAD2_HOST"])
        #expect(ipad2.ssh?.legacyAlgorithms == true)
        #expect(ipad2.ssh?.passwordEnv == "IPAD2_SSH_PASSWORD")
        #expect(ipad2.verificationTimeout == 90)
        #expect(ipad2.kiosk == true)

        let mini4 = try #require(matrix.device(id: "mini4"))
        #expect((mini4.arch, mini4.flavour, mini4.transport, mini4.iosMajor) == (.arm64, "modern", .usb, 15))
        #expect(mini4.verificationTimeout == 30, "from defaults")
        let mini5 = try #require(matrix.device(id: "mini5"))
        #expect((mini5.transport, mini5.iosMajor) == (.devicectl, 26))
        let iphone = try #require(matrix.device(id: "iphone"))
        #expect((iphone.transport, iphone.iosMajor, iphone.kiosk) == (.devicectl, 18, nil))

        for id in ["sim-ipad", "sim-iphone"] {
            let sim = try #require(matrix.device(id: id))
            #expect(
                (sim.kind, sim.transport, sim.arch, sim.flavour) == (.simulator, .simctl, .arm64, "simulator")
            )
        }
        for id in ["sim-ipadpro-ios9", "sim-ipad5-ios10"] {
            let sim = try #require(matrix.device(id: id))
            #expect(
                (sim.kind, sim.transport, sim.arch, sim.flavour) == (
                    .simulator, .rosettasim, .x86_64, "rosettasim"
                ))
        }
        #expect(matrix.device(id: "sim-ipadpro-ios9")?.iosVersion == "9.3")
        #expect(matrix.device(id: "sim-ipad5-ios10")?.iosVersion == "10.3")
    }
}
