import VirtualDevice

/// The launched app for these tests: prints one line per half second (an app's console output,
/// which real devices put in their system log) until it is killed.
struct ProbeBehaviour: VirtualAppBehaviour {
    static func line(_ udid: String) -> String { "fidelity probe on \(udid)" }

    func run(_ launch: VirtualAppLaunch, context: VirtualAppContext) async {
        while !Task.isCancelled {
            context.print(Self.line(launch.udid))
            try? await Task.sleep(for: .milliseconds(500))
        }
    }
}
