import Foundation
import Synchronization
import WorkoutSensors

/// An NMEA 0183 sentence written from the standard: `$`, the body, `*`, the XOR of the body's bytes
/// as two uppercase hex digits, CR LF (not from the project's encoder).
public func nmeaSentence(_ body: String) -> [UInt8] {
    var sum: UInt8 = 0
    for byte in body.utf8 { sum ^= byte }
    let digits = Array("0123456789ABCDEF")
    return Array("$\(body)*\(digits[Int(sum >> 4)])\(digits[Int(sum & 0x0F)])\r\n".utf8)
}

/// A GPS receiver that talks at one speed only, behind a pseudo-terminal.
///
/// A pseudo-terminal carries bytes whatever speed its reader sets, so the emulation does what the
/// wire would: it reads the speed the reader set on its side (`readerSettings`, the slave's termios)
/// before every byte it sends, and sends the byte of a GGA or RMC sentence (good checksums) only when
/// that is the receiver's speed; at any other speed the reader gets a byte of noise instead (a UART
/// sampling at the wrong rate yields bytes, none of them the sentence's). Checking once per epoch let
/// a whole good sentence through just after a hunt had moved on to another speed. One epoch every
/// 200 ms (a 5 Hz receiver), from a fixed point at 48°07.038' N 11°31.324' E. Stop it with ``stop()``.
public final class FixedSpeedGPS: Sendable {
    /// The pseudo-terminal: its `path` is the receiver's port.
    public let terminal: PseudoTerminal
    /// The one speed the receiver talks at.
    public let speed: Int
    private let running = Mutex(true)
    private let finished = DispatchSemaphore(value: 0)
    /// Whole sentences written at the right speed, and noise bytes written.
    public let written = Mutex((sentences: 0, noise: 0))

    /// Starts the receiver on a thread of its own.
    public init(speed: Int) throws {
        terminal = try PseudoTerminal()
        self.speed = speed
        let thread = Thread { [self] in run() }
        thread.start()
    }

    /// Stops the receiver and waits for its thread.
    public func stop() {
        running.withLock { $0 = false }
        finished.wait()
    }

    private func run() {
        var second = 0
        var noise: UInt32 = 0x1234_5678
        while running.withLock({ $0 }) {
            let time = String(format: "%02d%02d%02d.00", 12, second / 60 % 60, second % 60)
            for body in [
                "GPGGA,\(time),4807.0380,N,01131.3240,E,1,08,0.9,545.4,M,46.9,M,,",
                "GPRMC,\(time),A,4807.0380,N,01131.3240,E,000.0,000.0,261126,,,A",
            ] {
                var noiseBytes = 0
                for byte in nmeaSentence(body) {
                    if (try? terminal.readerSettings().baudRate) == speed {
                        _ = try? terminal.write([byte], whenFull: .drop)
                    } else {
                        noise = noise &* 1_664_525 &+ 1_013_904_223
                        _ = try? terminal.write([UInt8(truncatingIfNeeded: noise >> 24)], whenFull: .drop)
                        noiseBytes += 1
                    }
                }
                written.withLock {
                    $0.sentences += noiseBytes == 0 ? 1 : 0
                    $0.noise += noiseBytes
                }
            }
            second += 1
            Thread.sleep(forTimeInterval: 0.2)
        }
        finished.signal()
    }
}
