import DeployModel
import DeviceSpec
import Testing

@testable import HADeployDrivers

/// The backends own their `transport:` words, and exactly one backend takes each device: on every
/// host, with and without its twin, whatever the order of the registry.
@Suite struct BackendClaimTests {
    @Test func exactlyOneBackendTakesEachDeviceOnEveryHostWithAndWithoutItsTwin() throws {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: DriverTestPlans.root.appendingPathComponent("devices.yaml"),
            displayName: "devices.yaml")
        // The committed matrix uses every word a backend declares.
        #expect(Set(matrix.devices.map(\.transport)) == Set(Backends.vocabulary.words.map(\.word)))
        for host in [HostPlatform.linux, .macOS] {
            for twinned in [false, true] {
                for device in matrix.devices {
                    // Its twin as `--virtual` gives it: a usbmuxd one, a jailbroken one, or none.
                    let twin = Backends.twin(for: device)
                    let twins =
                        twinned
                        ? VirtualTwins(
                            address: "UNIX:/run/twins.sock",
                            udids: twin == .lockdown ? [device.id: "00008030-0000000000000001"] : [:],
                            unavailable: [:],
                            jailbroken: twin == .jailbroken
                                ? [
                                    device.id: JailbrokenTwinEndpoint(
                                        port: 2222, key: "/k", knownHosts: "/kh")
                                ] : [:])
                        : nil
                    let planning = BackendPlanning(
                        matrix: matrix, variables: [:], topology: Topology(host: host, virtual: twins),
                        paths: HostPaths(stateDirectory: "/state", home: "/home/user"))
                    let takers = Backends.all.filter { $0.choose(device, planning) != nil }.map(\.kind)
                    // A device with no twin (the Mac, simulators) is taken by no backend under --virtual:
                    // the planner says "no virtual twin".
                    let expected = twinned && Backends.twin(for: device) == nil ? 0 : 1
                    #expect(
                        takers.count == expected,
                        "\(device.id) (\(device.transport)) on \(host), twin: \(twinned): taken by \(takers)")
                }
            }
        }
    }

    @Test func aWordIsDeclaredAlikeByEveryBackendThatTakesIt() {
        var seen: [Transport: TransportWord] = [:]
        for backend in Backends.all {
            for word in backend.words {
                if let other = seen[word.word] {
                    #expect(other == word, "\(word.word) declared twice, differently")
                }
                seen[word.word] = word
            }
        }
        #expect(seen.count == Backends.vocabulary.words.count)
    }
}
