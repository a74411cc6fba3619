/// The events of one subscription, as an `AsyncSequence`. It survives reconnects (the connection
/// subscribes again), ends when the connection closes, and throws if HA ends it with an error.
/// Events fired while the connection was down are not replayed by HA.
public struct Subscription<Element: Sendable>: AsyncSequence, Sendable {
    public typealias AsyncIterator = AsyncThrowingStream<Element, any Error>.Iterator

    let stream: AsyncThrowingStream<Element, any Error>
    let key: Int
    let connection: HomeAssistantConnection

    public func makeAsyncIterator() -> AsyncIterator { stream.makeAsyncIterator() }

    /// Unsubscribes (`unsubscribe_events`) and ends the sequence.
    public func cancel() async {
        await connection.endSubscription(key: key)
    }
}
