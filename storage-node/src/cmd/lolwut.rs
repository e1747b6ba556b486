//! `LOLWUT [VERSION v] [arguments ...]` → computer art and the server version, as verbatim
//! text (a bulk string in RESP2), following Redis 7.0:
//!
//! - version 5 (and 4.9): `[columns [squares-per-row [squares-per-column]]]`, defaults 66, 8
//!   and 12; Georg Nees's "Schotter" drawn with Braille characters (2×4 pixels each), the
//!   squares of rows after the second rotated and shifted at random;
//! - version 6 (and 5.9): `[columns [rows]]`, defaults 80 and 20; a random skyline in the four
//!   greys of a colour terminal (escape sequences, one space per pixel);
//! - any other version, and no VERSION: `Redis ver. <version>`.
//!
//! Out-of-range sizes are clamped (columns and rows to 1..1000, squares to 1..200); a
//! non-integer argument is `ERR value is not an integer or out of range`.

use bytes::Bytes;
use rand::Rng;

use super::args::int;
use super::{CmdResult, Ctx, Handler, COMPATIBLE_VERSION};

pub const COMMANDS: &[(&str, Handler)] = &[("lolwut", lolwut)];

fn lolwut(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (version, rest) = match args.get(1) {
        Some(option) if args.len() >= 3 && option.eq_ignore_ascii_case(b"version") => {
            // Redis prints the number as an unsigned int, then reads its digits.
            let number = int(&args[2])? as u32;
            (format!("{number}.0.0"), &args[3..])
        }
        _ => (COMPATIBLE_VERSION.to_string(), &args[1..]),
    };
    let numbers = rest.iter().map(|a| int(a)).collect::<Result<Vec<i64>, _>>();
    let art = if version.starts_with("5.") && !version.starts_with("5.9")
        || version.starts_with("4.9")
    {
        let numbers = numbers?;
        let arg = |i: usize, default: i64| numbers.get(i).copied().unwrap_or(default);
        let mut text = schotter(
            arg(0, 66).clamp(1, 1000) as usize,
            arg(1, 8).clamp(1, 200) as usize,
            arg(2, 12).clamp(1, 200) as usize,
        );
        text.push_str("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
        text
    } else if version.starts_with("6.") && !version.starts_with("6.9") || version.starts_with("5.9")
    {
        let numbers = numbers?;
        let arg = |i: usize, default: i64| numbers.get(i).copied().unwrap_or(default);
        let mut text = skyline(
            arg(0, 80).clamp(1, 1000) as usize,
            arg(1, 20).clamp(1, 1000) as usize,
        );
        text.push_str(
            "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit \
             image from Plaguemon by hikikomori. Redis ver. ",
        );
        text
    } else {
        // The plain form takes (and checks) no arguments.
        "Redis ver. ".to_string()
    };
    let text = format!("{art}{COMPATIBLE_VERSION}\n");
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// Redis divides by this rounded √2, not by the exact one: the same literal lights the same
/// pixels.
#[allow(clippy::approx_constant)]
const REDIS_SQRT_2: f64 = 1.4142135623;

/// A grid of pixels, each a colour number; outside it reads 0 and drawing does nothing.
struct Canvas {
    width: i64,
    height: i64,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: usize, height: usize, colour: u8) -> Canvas {
        Canvas {
            width: width as i64,
            height: height as i64,
            pixels: vec![colour; width * height],
        }
    }

    fn index(&self, x: i64, y: i64) -> Option<usize> {
        ((0..self.width).contains(&x) && (0..self.height).contains(&y))
            .then(|| (x + y * self.width) as usize)
    }

    fn get(&self, x: i64, y: i64) -> u8 {
        self.index(x, y).map_or(0, |i| self.pixels[i])
    }

    fn set(&mut self, x: i64, y: i64, colour: u8) {
        if let Some(i) = self.index(x, y) {
            self.pixels[i] = colour;
        }
    }

    /// Bresenham's line, both ends included.
    fn line(&mut self, (mut x, mut y): (i64, i64), (x2, y2): (i64, i64)) {
        let (dx, dy) = ((x2 - x).abs(), (y2 - y).abs());
        let (step_x, step_y) = (if x < x2 { 1 } else { -1 }, if y < y2 { 1 } else { -1 });
        let mut error = dx - dy;
        loop {
            self.set(x, y, 1);
            if x == x2 && y == y2 {
                return;
            }
            let doubled = error * 2;
            if doubled > -dy {
                error -= dy;
                x += step_x;
            }
            if doubled < dx {
                error += dx;
                y += step_y;
            }
        }
    }

    /// A square of side `side` centred on (x, y), turned by `angle` radians. Its corners lie
    /// on the circle of radius side/√2; the sizes and angles are kept in single precision and
    /// the trigonometry done in double, as Redis's C arithmetic does, so the same pixels light.
    fn square(&mut self, x: i64, y: i64, side: f32, angle: f32) {
        use std::f64::consts::{FRAC_PI_2, FRAC_PI_4};
        let radius = ((side as f64 / REDIS_SQRT_2) as f32 as f64).round();
        let mut k = (FRAC_PI_4 + angle as f64) as f32;
        let mut corners = [(0i64, 0i64); 4];
        for corner in &mut corners {
            *corner = (
                ((k as f64).sin() * radius + x as f64).round() as i64,
                ((k as f64).cos() * radius + y as f64).round() as i64,
            );
            k = (k as f64 + FRAC_PI_2) as f32;
        }
        for j in 0..4 {
            self.line(corners[j], corners[(j + 1) % 4]);
        }
    }

    /// Each 2×4 block of pixels as one Braille character (U+2800 plus a bit per dot).
    fn braille(&self) -> String {
        const DOTS: [(i64, i64); 8] = [
            (0, 0),
            (0, 1),
            (0, 2),
            (1, 0),
            (1, 1),
            (1, 2),
            (0, 3),
            (1, 3),
        ];
        let mut text = String::new();
        for y in (0..self.height).step_by(4) {
            for x in (0..self.width).step_by(2) {
                let bits = DOTS
                    .iter()
                    .enumerate()
                    .filter(|(_, (dx, dy))| self.get(x + dx, y + dy) != 0)
                    .fold(0u32, |bits, (bit, _)| bits | (1 << bit));
                text.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
            }
            if y != self.height - 1 {
                text.push('\n');
            }
        }
        text
    }
}

/// A uniform number in 0..=1, as C's `rand() / RAND_MAX`.
fn unit(rng: &mut impl Rng) -> f32 {
    rng.gen_range(0.0..=1.0)
}

/// LOLWUT 5: rows of squares, more disordered the lower they are.
fn schotter(columns: usize, per_row: usize, per_column: usize) -> String {
    let width = columns * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_column as f32) as usize + padding * 2;
    let mut canvas = Canvas::new(width, height, 0);
    let mut rng = rand::thread_rng();
    for row in 0..per_column {
        for column in 0..per_row {
            let mut x = (column as f32 * side + side / 2.0 + padding as f32) as i64;
            let mut y = (row as f32 * side + side / 2.0 + padding as f32) as i64;
            let mut angle = 0.0;
            if row > 1 {
                let mut disorder = [0f32; 3];
                for value in &mut disorder {
                    *value = unit(&mut rng) / per_column as f32 * row as f32;
                }
                for value in &mut disorder {
                    if rng.gen::<bool>() {
                        *value = -*value;
                    }
                }
                let [r1, r2, r3] = disorder;
                angle = r1;
                x = (x as f32 + r2 * side / 3.0) as i64;
                y = (y as f32 + r3 * side / 3.0) as i64;
            }
            canvas.square(x, y, side, angle);
        }
    }
    canvas.braille()
}

/// A building of LOLWUT 6's skyline.
struct Building {
    left: i64,
    width: i64,
    height: i64,
    windows: bool,
    colour: u8,
}

impl Canvas {
    fn building(&mut self, b: &Building, rng: &mut impl Rng) {
        let bottom = self.height - 1;
        let top = bottom - b.height + 1;
        for y in (top..=bottom).rev() {
            for x in b.left..b.left + b.width {
                // The roof is narrower by two pixels on each side.
                if y == top && (x <= b.left + 1 || x >= b.left + b.width - 2) {
                    continue;
                }
                let mut colour = b.colour;
                let inside =
                    x > b.left + 1 && x < b.left + b.width - 2 && y > top + 1 && y < bottom - 1;
                if b.windows && inside {
                    let (rel_x, rel_y) = (x - (b.left + 1), y - (top + 1));
                    // Windows are two pixels wide and one tall (characters are tall).
                    if (rel_x / 2) % 2 != 0 && rel_y % 2 != 0 {
                        colour = loop {
                            let grey = rng.gen_range(1..=2);
                            if grey != b.colour {
                                break grey;
                            }
                        };
                        if rel_x % 2 != 0 {
                            colour = self.get(x - 1, y);
                        }
                    }
                }
                self.set(x, y, colour);
            }
        }
    }
}

/// LOLWUT 6: two rows of grey buildings behind a row of black ones with lit windows.
fn skyline(columns: usize, rows: usize) -> String {
    let mut canvas = Canvas::new(columns, rows, 3);
    let mut rng = rand::thread_rng();
    let (width, height) = (canvas.width, canvas.height);
    // Lighter buildings first, so they stay behind.
    for colour in [2u8, 1] {
        let mut offset = -10;
        while offset < width {
            offset += rng.gen_range(0..8);
            let building_width = 10 + rng.gen_range(0..9);
            let divisor = if colour == 2 { 2 } else { 3 };
            let building = Building {
                left: offset,
                width: building_width,
                height: height / 2 + rng.gen_range(0..height) / divisor,
                windows: false,
                colour,
            };
            canvas.building(&building, &mut rng);
            offset += if colour == 2 {
                building_width / 2
            } else {
                building_width + 1
            };
        }
    }
    let mut offset = -10;
    while offset < width {
        offset += rng.gen_range(0..8);
        let mut building_width = 5 + rng.gen_range(0..14);
        if building_width % 4 != 0 {
            building_width += building_width % 3;
        }
        let building = Building {
            left: offset,
            width: building_width,
            height: height / 3 + rng.gen_range(0..height) / 2,
            windows: true,
            colour: 0,
        };
        canvas.building(&building, &mut rng);
        offset += building_width + 5;
    }
    let mut text = String::new();
    for y in 0..height {
        for x in 0..width {
            let escape = match canvas.get(x, y) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            text.push_str(&format!("\x1b[{escape} \x1b[0m"));
        }
        if y != height - 1 {
            text.push('\n');
        }
    }
    text
}
