import Foundation
import WorkoutModel

extension FastISODate {
    /// `date` as `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC, the nearest millisecond), the text Foundation's `ISO8601DateFormatter`
    /// with fractional seconds writes, without a formatter; nil outside years 1600–9999 (left to the formatter).
    static func format(_ date: Date) -> String? {
        // As CoreFoundation and ICU compute it: milliseconds since 1970 as a double plus a half, rounded down
        // (the nearest millisecond).
        let milliseconds =
            ((date.timeIntervalSinceReferenceDate + Date.timeIntervalBetween1970AndReferenceDate) * 1_000 + 0.5)
            .rounded(.down)
        guard milliseconds.isFinite, milliseconds >= -11_676_096_000_000, milliseconds < 253_402_300_800_000 else {
            return nil
        }
        let total = Int(milliseconds)
        let millisecond = ((total % 1_000) + 1_000) % 1_000
        let seconds = (total - millisecond) / 1_000
        let secondOfDay = ((seconds % 86_400) + 86_400) % 86_400
        let days = (seconds - secondOfDay) / 86_400
        let (year, month, day) = CivilDays.date(days: days)
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int, at index: Int, width: Int) {
            var value = value
            for offset in stride(from: width - 1, through: 0, by: -1) {
                bytes[index + offset] = UInt8(0x30 + value % 10)
                value /= 10
            }
        }
        put(year, at: 0, width: 4)
        bytes[4] = 0x2D
        put(month, at: 5, width: 2)
        bytes[7] = 0x2D
        put(day, at: 8, width: 2)
        bytes[10] = 0x54
        put(secondOfDay / 3_600, at: 11, width: 2)
        bytes[13] = 0x3A
        put(secondOfDay / 60 % 60, at: 14, width: 2)
        bytes[16] = 0x3A
        put(secondOfDay % 60, at: 17, width: 2)
        bytes[19] = 0x2E
        put(millisecond, at: 20, width: 3)
        bytes[23] = 0x5A
        return String(decoding: bytes, as: UTF8.self)
    }
}
