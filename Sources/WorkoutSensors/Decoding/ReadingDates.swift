import Foundation

extension UTCTime {
    /// The instant, when the date is known.
    public var instant: Date? { secondsSince1970.map { Date(timeIntervalSince1970: $0) } }
}
