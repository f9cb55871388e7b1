import Foundation

/// NMEA 0183 sentences, as a GPS receiver on a UART sends them.
public enum NMEA {
    /// XOR of every byte of `body` (the text strictly between `$` and `*`).
    public static func checksum<Bytes: Sequence<UInt8>>(_ body: Bytes) -> UInt8 {
        body.reduce(0, ^)
    }

    /// `$` + body + `*HH` + CR LF.
    public static func sentence(_ body: String) -> [UInt8] {
        let hex = String(checksum(body.utf8), radix: 16, uppercase: true)
        return Array("$\(body)*\(hex.count == 1 ? "0" + hex : hex)\r\n".utf8)
    }

    /// A GGA fix (time, position, fix quality 1, 8 satellites, HDOP 0.9, altitude).
    public static func gga(time: Date, latitude: Double, longitude: Double, altitude: Double) -> [UInt8] {
        sentence(
            "GPGGA,\(clock(time)),\(coordinate(latitude, degreesWidth: 2)),\(latitude >= 0 ? "N" : "S"),"
                + "\(coordinate(longitude, degreesWidth: 3)),\(longitude >= 0 ? "E" : "W"),1,08,0.9,"
                + "\(String(format: "%.1f", altitude)),M,46.9,M,,")
    }

    /// An RMC record (valid, position, speed over ground in knots, course, date, mode A).
    public static func rmc(time: Date, latitude: Double, longitude: Double, speed: Double, course: Double) -> [UInt8] {
        sentence(
            "GPRMC,\(clock(time)),A,\(coordinate(latitude, degreesWidth: 2)),\(latitude >= 0 ? "N" : "S"),"
                + "\(coordinate(longitude, degreesWidth: 3)),\(longitude >= 0 ? "E" : "W"),"
                + "\(String(format: "%.2f", speed / 0.514444)),\(String(format: "%.1f", course)),\(day(time)),,,A")
    }

    /// `ddmm.mmmm` (or `dddmm.mmmm`) of an absolute angle.
    public static func coordinate(_ degrees: Double, degreesWidth: Int) -> String {
        let value = abs(degrees)
        var whole = Int(value)
        var minutes = (value - Double(whole)) * 60
        if (minutes * 10000).rounded() >= 600_000 {
            whole += 1
            minutes = 0
        }
        let text = String(format: "%0\(degreesWidth)d%07.4f", whole, minutes)
        return text
    }

    private static func utc(_ date: Date) -> DateComponents {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: date)
    }

    /// `hhmmss.ss` in UTC.
    static func clock(_ date: Date) -> String {
        let c = utc(date)
        let hundredths = Int((Double(c.nanosecond ?? 0) / 1e7).rounded(.down))
        return String(format: "%02d%02d%02d.%02d", c.hour ?? 0, c.minute ?? 0, c.second ?? 0, hundredths)
    }

    /// `ddmmyy` in UTC.
    static func day(_ date: Date) -> String {
        let c = utc(date)
        return String(format: "%02d%02d%02d", c.day ?? 0, c.month ?? 0, (c.year ?? 0) % 100)
    }
}
