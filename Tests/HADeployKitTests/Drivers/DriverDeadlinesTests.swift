import DeployModel
import DeviceSpec
import Foundation
import HADeployDrivers
import Testing

/// A driver's own commands run under the plan's deadlines: what a plan file says for a step is what
/// the driver stops its tool at, not a table of its own.
@Suite struct DriverDeadlinesTests {
    @Test func theDriverUsesThePlansStepDeadlinesNotItsOwnTable() throws {
        var device = try #require(try MacDeployTests.plan(host: .macOS).devices.first)
        // As a plan file may set them: connect and launch shorter than any default, no launch override.
        for index in device.steps.indices {
            switch device.steps[index].id {
            case .connect: device.steps[index].deadline = .seconds(7)
            case .launch: device.steps[index].deadline = .seconds(11)
            case .install: device.steps[index].deadline = .sizedToApp(base: 5, bytesPerSecond: 1_000_000)
            default: break
            }
        }
        device.timeouts = ["terminate": 3]
        let deadlines = DriverDeadlines(plan: device)
        #expect(deadlines.limit(.connect) == .seconds(7))
        #expect(deadlines.limit(.launch) == .seconds(11))
        #expect(deadlines.install(bytes: 40_000_000) == .seconds(45), "sized to the app as the plan sizes it")
        #expect(deadlines.terminate == .seconds(3))
        // A step the plan lacks keeps the one default table's; devices.yaml set no connect value.
        #expect(deadlines.limit(.screenshot) == .seconds(30))
        #expect(deadlines.override(.connect) == nil)
    }

    @Test func devicesYAMLTimeoutsReachAnUnplannedDevice() {
        let deadlines = DriverDeadlines(timeouts: ["connect": 90, "launch": 15, "terminate": 4])
        #expect(deadlines.limit(.connect) == .seconds(90))
        #expect(deadlines.limit(.launch) == .seconds(15))
        #expect(deadlines.limit(.mount) == .seconds(120))
        #expect(deadlines.terminate == .seconds(4))
        #expect(deadlines.override(.connect) == 90)
    }
}
