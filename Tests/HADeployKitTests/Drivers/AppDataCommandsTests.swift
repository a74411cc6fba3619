import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import HADeployKit

/// How each macOS backend is asked for the app's data container, as argv values, and how the
/// answers are read (shaped after the tools' documented output; these tools cannot run on Linux).
struct AppDataCommandsTests {
    @Test func simctlNamesTheDataContainer() {
        let command = SimctlCommands().dataContainer("SIM-UDID", bundleID: "com.example.hadashboard")
        #expect(
            command.arguments == [
                "simctl", "get_app_container", "SIM-UDID", "com.example.hadashboard", "data",
            ])
    }

    @Test func devicectlCopiesOneFileOfTheAppDataContainer() {
        let command = DevicectlCommands().copyAppContainer(
            .from, device: "DEV", bundleID: "com.example.hadashboard", source: "Documents/ha-log.txt",
            destination: "/tmp/x", jsonOutput: "/tmp/j.json", timeout: 30)
        #expect(
            command.arguments == [
                "devicectl", "device", "copy", "from", "--device", "DEV", "--domain-type", "appDataContainer",
                "--domain-identifier", "com.example.hadashboard", "--source", "Documents/ha-log.txt",
                "--destination", "/tmp/x", "--json-output", "/tmp/j.json", "--timeout", "30",
            ])
    }

    @Test func rosettasimAppinfoIsReadInBothShapes() {
        #expect(
            RosettaSimCommands(executable: "/opt/rosettasim-ctl").appInfo("U", bundleID: "b").arguments == [
                "appinfo", "U", "b",
            ])
        // Legacy runtimes: rosettasim-ctl's own JSON (NSJSONSerialization escapes slashes).
        let legacy = """
            {
              "CFBundleIdentifier" : "com.example.hadashboard",
              "Path" : "\\/Users\\/me\\/Library\\/Developer\\/CoreSimulator\\/Devices\\/U\\/data\\/Containers\\/Bundle\\/Application\\/A\\/HADashboard.app",
              "DataContainer" : "\\/Users\\/me\\/Library\\/Developer\\/CoreSimulator\\/Devices\\/U\\/data\\/Containers\\/Data\\/Application\\/B",
              "ApplicationType" : "User"
            }
            """
        #expect(
            RosettaSimDriver.dataContainer(inAppInfo: legacy)
                == "/Users/me/Library/Developer/CoreSimulator/Devices/U/data/Containers/Data/Application/B")
        // Native runtimes: `xcrun simctl appinfo` passed through, an old-style plist with file URLs.
        let native = """
            {
                ApplicationType = User;
                CFBundleIdentifier = "com.example.hadashboard";
                DataContainer = "file:///Users/me/Library/Developer/CoreSimulator/Devices/U/data/Containers/Data/Application/C%20D/";
            }
            """
        #expect(
            RosettaSimDriver.dataContainer(inAppInfo: native)
                == "/Users/me/Library/Developer/CoreSimulator/Devices/U/data/Containers/Data/Application/C D")
        #expect(RosettaSimDriver.dataContainer(inAppInfo: "App com.x not found.") == nil)
    }

    @Test func aContainerFileNeverLeavesTheContainer() throws {
        let container = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ctr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: container.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: container) }
        try Data("log".utf8).write(to: container.appendingPathComponent("Documents/ha-log.txt"))
        #expect(
            AppContainerFile.read(
                container: container.path, relativePath: "Documents/ha-log.txt", in: TestHost.fileSystem)
                == Data("log".utf8))
        #expect(
            AppContainerFile.read(
                container: container.path, relativePath: "Documents/ha-log-prev.txt", in: TestHost.fileSystem)
                == nil
        )
        #expect(
            AppContainerFile.read(
                container: container.path, relativePath: "../ctr/Documents/ha-log.txt",
                in: TestHost.fileSystem)
                == nil)
    }
}
