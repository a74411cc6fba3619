import HADeployCore
import NIOConcurrencyHelpers

/// The running app's window on the device: its screen and its standard output.
public final class VirtualAppContext: Sendable {
    private let state: NIOLockedValueBox<(screen: VirtualScreen, output: [String])>
    /// Where printed lines also go: the device log, as an app's stdout/NSLog ends up in syslog.
    private let console: @Sendable (String) -> Void
    /// The device's files: the app's container, preferences and keychain are read and written here.
    public let fileSystem: any FileSystem

    init(
        initialScreen: VirtualScreen, fileSystem: any FileSystem,
        console: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        state = NIOLockedValueBox((initialScreen, []))
        self.fileSystem = fileSystem
        self.console = console
    }

    /// What the app shows now.
    public var screen: VirtualScreen { state.withLockedValue { $0.screen } }

    /// Replaces the screen contents (shows up in the next screenshot).
    public func show(_ screen: VirtualScreen) {
        state.withLockedValue { $0.screen = screen }
    }

    /// Writes a line to the app's stdout (delivered to a debugger as `O` packets when it listens,
    /// and to the device log).
    public func print(_ line: String) {
        state.withLockedValue { $0.output.append(line) }
        console(line)
    }

    /// Takes the output written since the last call.
    func takeOutput() -> [String] {
        state.withLockedValue { state in
            defer { state.output.removeAll() }
            return state.output
        }
    }
}
