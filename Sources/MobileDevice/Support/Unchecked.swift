import Foundation

/// Carries a C handle into a closure that runs on the handle's own worker queue. The owner types
/// guarantee the handle is only touched there, which is what makes this `@unchecked` sound.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
