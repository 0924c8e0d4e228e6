/* Return the sum of the decimal digits of the integer n; the sign of a
   negative number is ignored, so digit_sum(-123) is 6. */
int digit_sum(long n)
{
    int sum = 0;
    if (n < 0)
        n = -n;
    while (n > 0) {
        sum += n % 10;
        n /= 10;
    }
    return sum;
}
