import Foundation
import TestSupport
import Testing

@testable import MobileDevice

@Suite struct DebugServerLauncherTests {
    let identity = DeviceIdentity(name: "iPad mini 4", udid: "00008030-001A2B3C4D5E802E")

    private func launcher(_ server: FakeDebugserver, secrets: Set<String> = []) -> DebugServerLauncher {
        DebugServerLauncher(
            client: GDBRemoteClient(transport: server, identity: identity, clock: TestHost.clock),
            identity: identity,
            redactor: Redactor(secrets))
    }

    @Test func launchesWithArgumentsAndEnvironmentThenDetaches() throws {
        let server = FakeDebugserver(.keepsRunning(output: "dashboard loaded token=s3cret\n"))
        let result = try launcher(server, secrets: ["s3cret"]).launch(
            executablePath: "/var/containers/Bundle/Application/X/Demo.app/Demo",
            workingDirectory: "/var/mobile/Containers/Data/Application/Y", arguments: ["--kiosk", "s3cret"],
            environment: ["HA_URL": "http://ha.local:8123"], settle: .milliseconds(200),
            deadline: .now + .seconds(5))
        #expect(
            server.received.first == "QSetWorkingDir:"
                + GDBPacket.hexEncode("/var/mobile/Containers/Data/Application/Y"))
        #expect(
            server.received.contains(
                "QEnvironmentHexEncoded:" + GDBPacket.hexEncode("HA_URL=http://ha.local:8123")))
        let argv = GDBPacket.launchArguments([
            "/var/containers/Bundle/Application/X/Demo.app/Demo", "--kiosk", "s3cret",
        ])
        #expect(server.received.contains(argv))
        // Continue, then interrupt and detach so the app keeps running.
        let tail = Array(server.received.suffix(2))
        #expect(tail == ["c", "D"])
        #expect(server.interrupts == 1)
        #expect(!server.received.contains("k"))
        #expect(result.processID == 0x1f4)
        #expect(result.earlyStop == nil)
        #expect(result.output == "dashboard loaded token=***\n")
    }

    @Test func crashAtLaunchIsReportedAsEarlyStop() throws {
        let server = FakeDebugserver(.crashesOnLaunch)
        let result = try launcher(server).launch(
            executablePath: "/A.app/A", workingDirectory: nil, arguments: [], environment: [:],
            settle: .milliseconds(300), deadline: .now + .seconds(5))
        #expect(result.earlyStop == .stopped(signal: 6))
        #expect(server.interrupts == 0)
    }

    @Test func refusedLaunchNamesTheStepButNotTheSecret() throws {
        let server = FakeDebugserver(.refusesLaunch("E89"))
        let error = #expect(throws: MobileDeviceError.self) {
            try launcher(server, secrets: ["hunter2"]).launch(
                executablePath: "/A.app/A", workingDirectory: nil, arguments: ["hunter2"], environment: [:],
                settle: .milliseconds(100), deadline: .now + .seconds(5))
        }
        #expect(error?.kind == .launchFailed)
        #expect(error?.step.hasPrefix("debugserver A") == true)
        #expect(error?.description.contains("hunter2") == false)
    }

    @Test func hungAppHitsTheDeadlineWithTheStepNamed() throws {
        let server = FakeDebugserver(.hangs)
        let started = ContinuousClock.now
        let error = #expect(throws: MobileDeviceError.self) {
            try launcher(server).launch(
                executablePath: "/A.app/A", workingDirectory: nil, arguments: [], environment: [:],
                settle: .milliseconds(100), deadline: .now + .milliseconds(600))
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(error?.step == "debugserver interrupt")
    }

    @Test func badChecksumIsNackedAndTheResendAccepted() throws {
        let server = FakeDebugserver(.keepsRunning(output: ""))
        server.corruptNextReply = true
        let client = GDBRemoteClient(transport: server, identity: identity, clock: TestHost.clock)
        let reply = try client.request("qLaunchSuccess", step: "test", deadline: .now + .seconds(2))
        #expect(reply == "OK")
        #expect(server.nacksFromClient == 1)
    }

    @Test func killAttachesByNameThenKills() throws {
        let server = FakeDebugserver(.keepsRunning(output: ""))
        #expect(try launcher(server).kill(processName: "Demo", deadline: .now + .seconds(2)))
        #expect(server.received == ["vAttachName;" + GDBPacket.hexEncode("Demo"), "k"])
    }
}
