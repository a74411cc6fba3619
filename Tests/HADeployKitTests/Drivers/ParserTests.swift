import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import HADeployKit

@Suite struct SimctlListParserTests {
    @Test func parsesEveryRuntimeWithStateAndAvailability() throws {
        let sims = try SimctlListParser.parse(AppleFixture.data("simctl-list-devices.json"))
        #expect(sims.count == 8)
        let ios9 = try #require(sims.first { $0.udid == "6B2F1C0A-93A1-4E47-9C1D-2A4E3F5B9D01" })
        #expect(ios9.runtimeName == "iOS 9.3")
        #expect(ios9.name == "iPad Pro")
        #expect(ios9.deviceType == "iPad-Pro")
        #expect(!ios9.isBooted)
        #expect(ios9.needsRosettaSim)
        let ios10 = try #require(sims.first { $0.runtimeName == "iOS 10.3" })
        #expect(ios10.isBooted)
        #expect(ios10.needsRosettaSim)
        let broken = try #require(sims.first { $0.runtimeName == "iOS 15.0" })
        #expect(!broken.isAvailable)
        #expect(broken.availabilityError == "runtime profile not found using \"System\" match policy")
        let iphone = try #require(sims.first { $0.name == "iPhone 15 Pro" })
        #expect(iphone.isBooted)
        #expect(!iphone.needsRosettaSim)
        #expect(iphone.version == "17.5")
        #expect(sims.contains { $0.platform == "watchOS" && $0.version == "10.5" })
        #expect(sims.first { $0.runtimeName == "iOS 18.2" }?.deviceType == "iPad-Pro-11-inch-M4-8GB")
    }

    @Test func parsesTheOldDisplayNameFormat() throws {
        let sims = try SimctlListParser.parse(AppleFixture.data("simctl-list-devices-xcode9.json"))
        #expect(sims.map(\.runtimeName) == ["iOS 10.3", "iOS 9.3"])
        #expect(sims.map(\.isAvailable) == [false, true])
        #expect(sims[1].deviceTypeIdentifier == nil)
    }

    @Test func rejectsWhatIsNotSimctlJSON() {
        #expect(throws: SimctlListParser.Failure.self) {
            try SimctlListParser.parse(Data("== Devices ==".utf8))
        }
        #expect(throws: SimctlListParser.Failure.self) {
            try SimctlListParser.parse(Data("{\"runtimes\": []}".utf8))
        }
    }
}

@Suite struct SimulatorSelectorTests {
    let sims: [SimulatorDevice]

    init() throws {
        sims = try SimctlListParser.parse(AppleFixture.data("simctl-list-devices.json"))
    }

    func found(_ selector: SimulatorSelector) -> SimulatorDevice? {
        if case .found(let device) = selector.choose(from: sims) { return device }
        return nil
    }

    @Test func findsByDeviceTypeNameAndRuntimeInTheirDevicesYamlSpelling() {
        #expect(
            found(.init(udid: nil, deviceType: "iPhone 15 Pro", runtime: "iOS 17.5"))?.udid
                == "C1D4A8E5-2B6F-4E19-9A03-5F7B8C2D1E64")
        #expect(
            found(.init(udid: nil, deviceType: "iPad Pro", runtime: "iOS 9.3"))?.udid
                == "6B2F1C0A-93A1-4E47-9C1D-2A4E3F5B9D01")
        #expect(
            found(.init(udid: nil, deviceType: "iPad (5th generation)", runtime: "iOS 10.3"))?.runtimeName
                == "iOS 10.3")
        #expect(
            found(.init(udid: nil, deviceType: "iPad Pro 11-inch (M4)", runtime: "18.2"))?.runtimeName
                == "iOS 18.2")
    }

    /// Two iPad (10th generation) on iOS 17.5, one renamed "Wall panel": matched by type identifier too,
    /// and the choice is stable (sorted), so every run uses the same one.
    @Test func matchesTheTypeIdentifierOfRenamedSimulators() {
        let chosen = found(
            .init(
                udid: nil, deviceType: "com.apple.CoreSimulator.SimDeviceType.iPad-10th-generation",
                runtime: "com.apple.CoreSimulator.SimRuntime.iOS-17-5"))
        #expect(chosen?.udid == "3F8E2B71-6C0D-4A95-B1E4-8D7C2A9F0B33")
        #expect(
            found(.init(udid: nil, deviceType: "Wall panel", runtime: "iOS 17.5"))?.udid
                == "D9E0F1A2-B3C4-4D5E-8F60-718293A4B5C6")
    }

    @Test func findsByUDIDInAnyCase() {
        #expect(
            found(.init(udid: "c1d4a8e5-2b6f-4e19-9a03-5f7b8c2d1e64", deviceType: nil, runtime: nil))?.name
                == "iPhone 15 Pro")
    }

    @Test func explainsWhatIsMissing() {
        guard
            case .notFound(let reason, let fix) = SimulatorSelector(
                udid: nil, deviceType: "iPhone 16", runtime: "iOS 17.5"
            ).choose(from: sims)
        else {
            Issue.record("found something")
            return
        }
        #expect(
            reason
                == "no iPhone 16 simulator on iOS 17.5 (there: Wall panel, iPad (10th generation), iPhone 15 Pro)"
        )
        #expect(
            fix
                == "create one: xcrun simctl create 'iPhone 16' 'iPhone 16' com.apple.CoreSimulator.SimRuntime.iOS-17-5"
        )

        guard
            case .notFound(let unavailable, _) = SimulatorSelector(
                udid: nil, deviceType: "iPad (9th generation)", runtime: "iOS 15"
            ).choose(from: sims)
        else {
            Issue.record("found an unavailable simulator")
            return
        }
        #expect(unavailable.contains("is unavailable: runtime profile not found"))

        guard
            case .notFound(let noUDID, _) = SimulatorSelector(
                udid: "00000000-0000-0000-0000-000000000000", deviceType: nil, runtime: nil
            ).choose(from: sims)
        else {
            Issue.record("found a missing UDID")
            return
        }
        #expect(noUDID == "no simulator has UDID 00000000-0000-0000-0000-000000000000")
    }
}

@Suite struct DevicectlOutputParserTests {
    @Test func listDevices() throws {
        let devices = try DevicectlOutputParser.devices(AppleFixture.data("devicectl-list-devices.json"))
        // devicectl lists a paired Apple Watch too; discovery keeps the iOS ones (platform).
        #expect(devices.map(\.name) == ["iPad mini 5", "iPhone 16 Pro Max", "iPad mini 4", "Kitchen watch"])
        #expect(devices.map(\.platform) == ["iOS", "iOS", "iOS", "watchOS"])
        let mini5 = devices[0]
        #expect(mini5.identifier == "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF")
        #expect(mini5.udid == "00008020-000A1B2C3D4E002E")
        #expect(mini5.osVersion == "26.0")
        #expect(mini5.productType == "iPad11,1")
        #expect(mini5.transportType == "localNetwork")
        #expect(mini5.tunnelState == "connected")
        #expect(mini5.developerModeStatus == "enabled")
        #expect(mini5.cpuType == "arm64e")
        #expect(mini5.matches("ipad MINI 5") && mini5.matches("00008020-000A1B2C3D4E002E"))
        #expect(devices[2].developerModeStatus == "disabled")
    }

    @Test func infoDetailsInstallAndLaunch() throws {
        let details = try DevicectlOutputParser.details(AppleFixture.data("devicectl-info-details.json"))
        #expect(details.name == "iPad mini 5")
        #expect(details.osVersion == "26.0")
        #expect(
            try DevicectlOutputParser.installedBundleIDs(AppleFixture.data("devicectl-install-app.json")) == [
                "com.example.hadashboard"
            ])
        #expect(
            try DevicectlOutputParser.launchedProcessID(AppleFixture.data("devicectl-process-launch.json"))
                == 7401)
    }

    @Test func reportsDevicectlsOwnError() throws {
        let data = try AppleFixture.data("devicectl-error-device-not-found.json")
        #expect {
            try DevicectlOutputParser.details(data)
        } throws: { error in
            "\(error)" == "The specified device was not found. (com.apple.dt.CoreDeviceError 1000)"
        }
        #expect(throws: DevicectlOutputParser.Malformed.self) {
            try DevicectlOutputParser.devices(AppleFixture.data("devicectl-install-app.json"))
        }
    }

    /// A launch refused behind the passcode: CoreDevice's "failed to launch" wraps SpringBoard's
    /// `FBSOpenApplicationErrorDomain` 7, which is the error named, so the device reads as locked.
    @Test func aLaunchRefusedOnALockedDeviceIsSaidLocked() throws {
        let data = try AppleFixture.data("devicectl-error-launch-locked.json")
        var text = ""
        #expect {
            try DevicectlOutputParser.result(data)
        } throws: { error in
            text = "\(error)"
            return true
        }
        #expect(text.hasPrefix("The application failed to launch. The request to open"), "\(text)")
        #expect(text.hasSuffix("could not be, unlocked. (FBSOpenApplicationErrorDomain 7)"), "\(text)")
        let error = AppleDriverError(.failed, step: "launch", device: "iPad", reason: "devicectl: \(text)")
        #expect(error.isDeviceLocked)
        let other = try AppleFixture.data("devicectl-error-device-not-found.json")
        #expect {
            try DevicectlOutputParser.result(other)
        } throws: { error in
            !AppleDriverError(.failed, step: "launch", device: "iPad", reason: "\(error)").isDeviceLocked
        }
    }
}

@Suite struct PyMobileDevice3ParserTests {
    @Test func usbmuxList() throws {
        let devices = try PyMobileDevice3Parser.devices(AppleFixture.data("pymobiledevice3-usbmux-list.json"))
        #expect(
            devices.map(\.udid) == [
                "00008140-001C2D3E4F50801C", "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
                "00008020-000A1B2C3D4E002E",
            ])
        #expect(devices.map(\.majorVersion) == [18, 15, 26])
        #expect(devices[2].connectionType == "Network")
        #expect(devices[0].name == "iPhone 16 Pro Max")
    }

    @Test func appsList() throws {
        let apps = try PyMobileDevice3Parser.apps(AppleFixture.data("pymobiledevice3-apps-list.json"))
        let app = try #require(apps["com.example.hadashboard"])
        #expect(app.shortVersion == "1.4.0")
        #expect(app.buildVersion == "212")
        #expect(app.executable == "HA Dashboard")
        #expect(apps.count == 2)
    }

    @Test func tunneldAndLaunchOutput() throws {
        #expect(
            try PyMobileDevice3Parser.tunneledUDIDs(AppleFixture.data("tunneld.json")) == [
                "00008140-001C2D3E4F50801C"
            ])
        #expect(try PyMobileDevice3Parser.tunneledUDIDs(Data("{\"X\": []}".utf8)).isEmpty)
        #expect(PyMobileDevice3Parser.launchedProcessID("Process launched with pid 3141\n") == 3141)
        #expect(PyMobileDevice3Parser.launchedProcessID("ERROR could not launch") == nil)
    }
}

@Suite struct CrashReportScannerTests {
    let since = Date(timeIntervalSince1970: 1_748_859_600)  // 2025-06-02 10:20:00 UTC, 31 s before the crash

    @Test func findsTheSimulatorsReportByHeaderTimestampAndUDID() throws {
        let folder = try TemporaryFolder()
        let reports = folder.path("DiagnosticReports")
        try FileManager.default.createDirectory(at: reports, withIntermediateDirectories: true)
        let name = "HA Dashboard-2025-06-02-102031.ips"
        try FileManager.default.copyItem(at: AppleFixture.url(name), to: reports.appendingPathComponent(name))
        try Data("{\"name\":\"Other\"}\n".utf8).write(
            to: reports.appendingPathComponent("Other-2025-06-02-102031.ips"))

        let scanner = CrashReportScanner(
            executable: "HA Dashboard", since: since, simulatorUDID: "3F8E2B71-6C0D-4A95-B1E4-8D7C2A9F0B33",
            fileSystem: TestHost.fileSystem)
        let copies = try scanner.copyMatches(from: reports, into: folder.path("out"))
        #expect(copies.map(\.lastPathComponent) == [name])
        #expect(FileManager.default.fileExists(atPath: folder.path("out").appendingPathComponent(name).path))

        // Another simulator's crash of the same app, and an older crash, are not this launch's.
        let otherSim = CrashReportScanner(
            executable: "HA Dashboard", since: since, simulatorUDID: "C1D4A8E5-2B6F-4E19-9A03-5F7B8C2D1E64",
            fileSystem: TestHost.fileSystem)
        #expect(otherSim.matches(in: reports).isEmpty)
        let later = CrashReportScanner(
            executable: "HA Dashboard", since: since.addingTimeInterval(60), simulatorUDID: nil,
            fileSystem: TestHost.fileSystem)
        #expect(later.matches(in: reports).isEmpty)
    }

    /// Real `.ips` bodies escape every `/` (`\/Users\/…\/CoreSimulator\/Devices\/…`): the scanner
    /// used to look for `CoreSimulator/Devices/` in the raw text, never found it, and so gave a
    /// simulator's crash to every simulator and to the Mac, and the Mac's own crash to the
    /// simulators. Now the decoded `procPath` decides.
    @Test func theProcessPathOfARealIpsDecidesWhoseCrashItIs() throws {
        let folder = try TemporaryFolder()
        let reports = folder.path("DiagnosticReports")
        try FileManager.default.createDirectory(at: reports, withIntermediateDirectories: true)
        let name = "HA Dashboard-2025-06-02-102031.ips"
        let simulatorCrash = try String(contentsOf: AppleFixture.url(name), encoding: .utf8)
        #expect(
            simulatorCrash.contains(#"\/CoreSimulator\/Devices\/"#), "the fixture is escaped as real ones are"
        )
        try Data(simulatorCrash.utf8).write(to: reports.appendingPathComponent(name))

        func scanner(simulator: String? = nil, excludeSimulators: Bool = false) -> CrashReportScanner {
            var scanner = CrashReportScanner(
                executable: "HA Dashboard", since: since, simulatorUDID: simulator,
                fileSystem: TestHost.fileSystem)
            scanner.excludeSimulators = excludeSimulators
            return scanner
        }
        let mine = "3F8E2B71-6C0D-4A95-B1E4-8D7C2A9F0B33"
        #expect(scanner(simulator: mine).matches(in: reports).map(\.lastPathComponent) == [name])
        #expect(scanner(simulator: "C1D4A8E5-2B6F-4E19-9A03-5F7B8C2D1E64").matches(in: reports).isEmpty)
        #expect(scanner(excludeSimulators: true).matches(in: reports).isEmpty, "the Mac's scan")

        // The Mac Catalyst app's own crash (same executable name): the Mac's, no simulator's.
        try FileManager.default.removeItem(at: reports.appendingPathComponent(name))
        let macName = "HA Dashboard-2025-06-02-102032.ips"
        let macCrash = simulatorCrash.replacingOccurrences(
            of: #"\/Users\/dev\/Library\/Developer\/CoreSimulator\/Devices\/"# + mine
                + #"\/data\/Containers\/Bundle\/Application\/0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D"#,
            with: #"\/Users\/dev\/Library\/Application Support\/hadeploy\/mac"#)
        #expect(macCrash != simulatorCrash)
        try Data(macCrash.utf8).write(to: reports.appendingPathComponent(macName))
        #expect(scanner(simulator: mine).matches(in: reports).isEmpty)
        #expect(scanner(excludeSimulators: true).matches(in: reports).map(\.lastPathComponent) == [macName])
    }
}
