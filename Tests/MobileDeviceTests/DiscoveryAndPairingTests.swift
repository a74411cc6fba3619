import Foundation
import HADeployCore
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

@Suite struct DiscoveryTests {
    @Test func listsEveryDeviceWithIdentityAndPairing() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let devices = try await USBTransport.devices(clock: TestHost.clock)
        let ipad2UDID = await emulator.udid(SharedEmulator.Device.ipad2)
        let trustUDID = await emulator.udid(SharedEmulator.Device.trust)
        let ipad2 = try #require(devices.first { $0.udid == ipad2UDID })
        #expect(ipad2.name == "iPad 2")
        #expect(ipad2.productType == "iPad2,1")
        #expect(ipad2.productVersion == "9.3.5")
        #expect(ipad2.cpuArchitecture == "armv7")
        #expect(ipad2.connection == "USB")
        #expect(ipad2.pairing == .paired)
        let trust = try #require(devices.first { $0.udid == trustUDID })
        #expect(trust.pairing == .notPaired)
        #expect(trust.problem?.contains("tap Trust") == true)
        // The same lists the Debian tool prints: USB entries with -l, Wi-Fi ones with -n.
        let listed = try await DebianTool.run("idevice_id", ["-l"], socket: emulator.socket)
        let fromTool = Set(listed.output.split(separator: "\n").map(String.init))
        #expect(fromTool == Set(devices.filter { $0.connection == "USB" }.map(\.udid)))
        let network = try await DebianTool.run("idevice_id", ["-n"], socket: emulator.socket)
        let wifiUDID = await emulator.udid(SharedEmulator.Device.wifi)
        let wifi = try #require(devices.first { $0.udid == wifiUDID })
        #expect(wifi.connection == "Network" && wifi.pairing == .paired, "\(wifi)")
        let networkListed = Set(network.output.split(separator: "\n").map(String.init))
        #expect(networkListed.contains(wifi.udid), "\(network.output)")
        #expect(
            networkListed == Set(devices.filter { $0.connection == "Network" }.map(\.udid)),
            "\(network.output)")
    }

    @Test func unknownDeviceFailsAtTheDeadlineNamingWhatIsListed() async throws {
        _ = try await SharedEmulator.shared.context()
        let started = ContinuousClock.now
        let error = await #expect(throws: MobileDeviceError.self) {
            try await USBTransport.connect(
                udid: "00008030-00000000DEADBEEF", deadline: .now + .seconds(1),
                options: USBDeviceOptions(
                    fileSystem: TestHost.fileSystem, clock: TestHost.clock,
                    stateDirectory: URL(fileURLWithPath: "/tmp/unused")))
        }
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(error?.kind == .notConnected)
        #expect(error?.description.contains("Plug the device in") == true)
    }

    @Test func connectReadsTheDeviceInfo() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let device = try await emulator.connect(SharedEmulator.Device.iphone18)
        let info = await device.info
        #expect(info.identity.name == "iPhone 16 Pro Max")
        #expect(info.productType == "iPhone17,2")
        #expect(info.productVersion.major == 18)
        #expect(info.cpuArchitecture == "arm64")
    }
}

@Suite(.serialized) struct PairingTests {
    @Test func trustDialogThenPasscodeThenPaired() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.trust)
        let pending = await #expect(throws: MobileDeviceError.self) {
            try await emulator.connect(SharedEmulator.Device.trust)
        }
        #expect(pending?.kind == .trustPending)
        #expect(
            pending?.description.hasPrefix(
                "iPad mini 4 (UDID \(udid)) asks to trust this computer: unlock it and tap Trust") == true)

        try await emulator.daemon.clearFaults(udid: udid)
        try await emulator.daemon.inject(.passcodeLocked, udid: udid)
        let locked = await #expect(throws: MobileDeviceError.self) {
            try await emulator.connect(SharedEmulator.Device.trust)
        }
        #expect(locked?.kind == .passcodeLocked)
        #expect(
            locked?.description.hasPrefix("iPad mini 4 (UDID \(udid)) is passcode-locked: unlock it") == true)

        // The user unlocks and taps Trust: the next connection pairs and works.
        try await emulator.daemon.clearFaults(udid: udid)
        let device = try await emulator.connect(SharedEmulator.Device.trust)
        #expect(await device.info.productType == "iPad5,1")
        let summary = try await USBTransport.devices(clock: TestHost.clock).first { $0.udid == udid }
        #expect(summary?.pairing == .paired)
    }
}
